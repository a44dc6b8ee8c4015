"""Builders shared by the tests and the benchmarks: a tiny training world made from the example WhatsApp chats
(a 400-id tokenizer, token shards, the messages Parquet and the sft-data examples for "Sam"), short-run
training params, and a tiny pretrained checkpoint. Benchmarks import this module too (bench/ puts the project
root on sys.path), so a builder is written once."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storage.fingerprint import hash_file
from storage.parquet import ParquetShardWriter
from storage.schemas import MESSAGE_SCHEMA
from storage.tokens import TokenShardWriter
from tasks.sft_data import SftDataResult, build_sft_examples
from tasks.tokenizer import TokenizerParams, load_tokenizer, train_tokenizer
from tasks.training import PretrainParams, SftDataParams, make_run_config
from tasks.whatsapp import parse_whatsapp_export

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "whatsapp"
TINY_MODEL = {"d_model": 32, "n_layers": 2, "n_heads": 2}
BLOCK = 128


@dataclass(frozen=True)
class ChatWorld:
    root: Path
    tokenizer: Path
    tokens: Path  # folder with train/ and val/ token shards
    tokens_stats: dict
    messages: list[str]  # messages Parquet parts
    sft: SftDataResult


def build_chat_world(root: Path, *, block: int = BLOCK, repeat_first: int = 4, repeat_rest: int = 3) -> ChatWorld:
    """The example chats as a training world under `root`. The train shard holds the first three chats
    `repeat_first` times and the others `repeat_rest` times; the val shard holds the others once."""
    chats = [parse_whatsapp_export(p) for p in sorted(EXAMPLES.iterdir())]
    texts = ["\n".join(m.text for m in chat.messages if m.kind == "text") for chat in chats]

    info = train_tokenizer(texts, root / "tokenizer", TokenizerParams(vocab_size=400, heldout_fraction=0))
    tok = load_tokenizer(info.path)
    eot = tok.token_to_id("<|endoftext|>")
    for split, docs in (("train", texts[:3] * repeat_first + texts[3:] * repeat_rest), ("val", texts[3:])):
        with TokenShardWriter(root / "tokens" / split / "shard-00000.bin", np.uint16) as w:
            for doc in docs:
                w.add_document(tok.encode(doc, add_special_tokens=False).ids + [eot])

    parts = []
    for i, chat in enumerate(chats):
        part = root / "messages" / f"part-{i:05d}.parquet"
        with ParquetShardWriter(part, MESSAGE_SCHEMA) as w:
            w.write_rows(chat.as_rows())
        parts.append(str(part))
    sft = build_sft_examples(parts, info.path, SftDataParams(target_author="Sam", block_size=block),
                             str(root / "sft"))
    stats = {"vocab_size": tok.get_vocab_size(), "tokenizer_sha256": hash_file(info.path)}
    return ChatWorld(root, Path(info.path), root / "tokens", stats, parts, sft)


@functools.lru_cache(maxsize=1)
def tiny_world() -> ChatWorld:
    """The tests' world, built once per session in a temporary folder."""
    root = Path(tempfile.mkdtemp(prefix="chatlike-train-tests-"))
    atexit.register(shutil.rmtree, root, True)
    return build_chat_world(root)


def quiet_params(cls, **overrides):
    """Params for a short CPU run: tiny model, no sampling or evaluation unless asked."""
    base = dict(max_steps=8, batch_size=4, log_interval=2, eval_interval=0, eval_batches=2,
                checkpoint_interval=4, keep_last=5, sample_interval=0, warmup_steps=2, device="cpu", seed=3)
    if cls is PretrainParams:
        base.update(block_size=BLOCK, model=dict(TINY_MODEL))
    return cls(**{**base, **overrides})


def world_run_config(world: ChatWorld, mode: str, run_dir: Path, params, init_from=None) -> dict:
    """run.json of a run on `world`: the token shards for pretrain, the sft-data examples otherwise."""
    if mode == "pretrain":
        return make_run_config(mode, params, run_dir, world.tokenizer, world.tokens / "train", world.tokens / "val",
                               tokens_manifest=world.tokens_stats)
    return make_run_config(mode, params, run_dir, world.tokenizer, world.sft.train_path, world.sft.val_path,
                           init_from=init_from)


def run_config(mode: str, run_dir: Path, params, init_from=None) -> dict:
    return world_run_config(tiny_world(), mode, run_dir, params, init_from)


@functools.lru_cache(maxsize=1)
def pretrained_checkpoint() -> Path:
    """A tiny model pretrained for 30 steps on the example chats (shared by the SFT, LoRA and chat tests)."""
    import torch

    from model.train import train

    torch.set_num_threads(1)
    run_dir = tiny_world().root / "runs" / "pretrain"
    params = quiet_params(PretrainParams, max_steps=30, checkpoint_interval=30, learning_rate=3e-3, min_lr=3e-4)
    result = train(run_config("pretrain", run_dir, params))
    return Path(result.checkpoint)


# ------------------------------------------------------------------------------------------------------------
# tiny Hugging Face base models (model/hf.py, `chatlike model import`)

HF_TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=64)
HF_TEXTS = ["Hello there, how are you doing today? See you at 10am.", "Are you free on Saturday? We could go out.",
            "wach nta mzyan? sa7a 3lach 2day", "On mange chez moi vers 20h, apporte du pain."] * 10


def hf_tokenizer(special_tokens: tuple[str, ...] = ("<s>", "</s>"), vocab_size: int = 300):
    """A base model's byte-level BPE: its own special tokens, and of the chat format's only those named."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(HF_TEXTS, trainer)
    return tok


@dataclass(frozen=True)
class HfBase:
    folder: Path
    model: object  # the transformers model, in eval mode
    vocab: int  # ids of its tokenizer: the logit columns both models share


def save_hf_base(folder: Path, architecture: str = "LlamaForCausalLM", *, special_tokens=("<s>", "</s>"),
                 vocab_size: int | None = None, shard: bool = False, seed: int = 0, **config) -> HfBase:
    """A random 2-layer `architecture` saved with `save_pretrained` (sharded with an index file if `shard`) beside
    its tokenizer.json. vocab_size defaults to the tokenizer's ids; norms and biases get random values too, so a
    misplaced one shows in the logits."""
    import torch
    import transformers

    tok = hf_tokenizer(special_tokens)
    vocab = tok.get_vocab_size()
    config_class = {"LlamaForCausalLM": transformers.LlamaConfig, "Qwen2ForCausalLM": transformers.Qwen2Config,
                    "MistralForCausalLM": transformers.MistralConfig}[architecture]
    hf_config = config_class(**{**HF_TINY, "vocab_size": vocab_size or vocab, "bos_token_id": None,
                                "eos_token_id": None, "pad_token_id": None, **config})
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(hf_config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias") or "norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(folder, max_shard_size="100KB" if shard else "1GB")
    tok.save(str(folder / "tokenizer.json"))
    return HfBase(folder, model, vocab)
