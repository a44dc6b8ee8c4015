"""A tiny world for the training tests, built once per test session: a 400-id tokenizer trained on the example
WhatsApp chats, token shards of those chats, their messages Parquet and the sft-data examples for "Sam".

Other test modules import `tiny_world()` and `run_config()`; the tests here check that the params models and the
trainer's settings agree."""

from __future__ import annotations

import atexit
import dataclasses
import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from storage.fingerprint import hash_file
from storage.parquet import ParquetShardWriter
from storage.schemas import MESSAGE_SCHEMA
from storage.tokens import TokenShardWriter
from tasks.sft_data import SftDataResult, build_sft_examples
from tasks.tokenizer import TokenizerParams, load_tokenizer, train_tokenizer
from tasks.training import LoraParams, PretrainParams, SftDataParams, SftParams, make_run_config
from tasks.whatsapp import parse_whatsapp_export

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "whatsapp"
TINY_MODEL = {"d_model": 32, "n_layers": 2, "n_heads": 2}
BLOCK = 128


@dataclass(frozen=True)
class TinyWorld:
    root: Path
    tokenizer: Path
    tokens: Path  # folder with train/ and val/ token shards
    tokens_stats: dict
    messages: list[str]  # messages Parquet parts
    sft: SftDataResult


@functools.lru_cache(maxsize=1)
def tiny_world() -> TinyWorld:
    root = Path(tempfile.mkdtemp(prefix="chatlike-train-tests-"))
    atexit.register(shutil.rmtree, root, True)
    chats = [parse_whatsapp_export(p) for p in sorted(EXAMPLES.iterdir())]
    texts = ["\n".join(m.text for m in chat.messages if m.kind == "text") for chat in chats]

    info = train_tokenizer(texts, root / "tokenizer", TokenizerParams(vocab_size=400, heldout_fraction=0))
    tok = load_tokenizer(info.path)
    eot = tok.token_to_id("<|endoftext|>")
    for split, docs in (("train", texts[:3] * 4 + texts[3:] * 3), ("val", texts[3:])):
        with TokenShardWriter(root / "tokens" / split / "shard-00000.bin", np.uint16) as w:
            for doc in docs:
                w.add_document(tok.encode(doc, add_special_tokens=False).ids + [eot])

    parts = []
    for i, chat in enumerate(chats):
        part = root / "messages" / f"part-{i:05d}.parquet"
        with ParquetShardWriter(part, MESSAGE_SCHEMA) as w:
            w.write_rows(chat.as_rows())
        parts.append(str(part))
    sft = build_sft_examples(parts, info.path, SftDataParams(target_author="Sam", block_size=BLOCK),
                             str(root / "sft"))
    stats = {"vocab_size": tok.get_vocab_size(), "tokenizer_sha256": hash_file(info.path)}
    return TinyWorld(root, Path(info.path), root / "tokens", stats, parts, sft)


def quiet_params(cls, **overrides):
    """Params for a short CPU run: tiny model, no sampling or evaluation unless asked."""
    base = dict(max_steps=8, batch_size=4, log_interval=2, eval_interval=0, eval_batches=2,
                checkpoint_interval=4, keep_last=5, sample_interval=0, warmup_steps=2, device="cpu", seed=3)
    if cls is PretrainParams:
        base.update(block_size=BLOCK, model=dict(TINY_MODEL))
    return cls(**{**base, **overrides})


def run_config(mode: str, run_dir: Path, params, init_from=None) -> dict:
    w = tiny_world()
    if mode == "pretrain":
        return make_run_config(mode, params, run_dir, w.tokenizer, w.tokens / "train", w.tokens / "val",
                               tokens_manifest=w.tokens_stats)
    return make_run_config(mode, params, run_dir, w.tokenizer, w.sft.train_path, w.sft.val_path, init_from=init_from)


@functools.lru_cache(maxsize=1)
def pretrained_checkpoint() -> Path:
    """A tiny model pretrained for 30 steps on the example chats (shared by the SFT, LoRA and chat tests)."""
    from model.train import train

    torch.set_num_threads(1)
    run_dir = tiny_world().root / "runs" / "pretrain"
    params = quiet_params(PretrainParams, max_steps=30, checkpoint_interval=30, learning_rate=3e-3, min_lr=3e-4)
    result = train(run_config("pretrain", run_dir, params))
    return Path(result.checkpoint)


# ------------------------------------------------------------------------------------------------------------


def test_params_models_match_the_trainer_settings():
    from model.train import TrainSettings

    fields = {f.name: f.default for f in dataclasses.fields(TrainSettings)}
    for cls in (PretrainParams, SftParams, LoraParams):
        dumped = cls().model_dump(mode="json")
        assert set(dumped) <= set(fields), f"{cls.__name__} has fields the trainer does not know"
        TrainSettings.from_dict(dumped)


def test_lora_params_default_targets_are_the_model_projection_names():
    """Every projection of every attention family and MLP, never the output head or the router."""
    from model import GPT, ModelConfig
    from model.lora import linear_module_names
    from model.train import DEFAULT_LORA_TARGETS

    targets = set(LoraParams().target_modules)
    assert targets == set(DEFAULT_LORA_TARGETS)
    small = dict(n_layers=1, d_model=64, n_heads=4, vocab_size=64, n_experts=2, n_experts_per_token=1)
    found = set()
    for overrides in (dict(), dict(attention="mla", n_kv_heads=None),
                      dict(attention="mla", n_kv_heads=None, mla_q_lora_rank=16),
                      dict(attention="linear", position="none")):
        names = linear_module_names(GPT(ModelConfig.preset("llama-style", **small, **overrides)))
        assert names - {"lm_head", "router"} <= targets, overrides
        found |= names
    assert targets <= found


def test_sft_data_params_refuse_unknown_kinds():
    import pytest

    with pytest.raises(ValueError, match="unknown message kind"):
        SftDataParams(drop_kinds=["media", "stickers"])
