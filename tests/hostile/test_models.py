"""Hostile model files (issue 18, items 4 and 8): corrupted KenLM models, pickles where tensors belong, absurd
model configs, a full disk; and the hostile model inputs that already get a one-line error, so they stay that way.

Every case asserts what a user sees: one line that names the file and says what to do, and nothing half-written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from storage.dataset import DatasetWriter
from tasks.kenlm_train import KenlmToolMissing, find_kenlm_tool
from tasks.perplexity import PerplexityParams, PerplexityScorer, clear_model_cache, load_scorers
from tasks.perplexity import scorer as scorer_module
from tests.conftest import shared_file


def _one_line(exc: pytest.ExceptionInfo | BaseException) -> str:
    message = str(exc.value if isinstance(exc, pytest.ExceptionInfo) else exc)
    assert "\n" not in message.strip(), message
    assert "Traceback" not in message
    return message


# ------------------------------------------------------------------------------------- KenLM models (item 4)


@pytest.fixture(autouse=True)
def _fresh_model_cache():
    clear_model_cache()
    yield
    clear_model_cache()


def _build_binary(arpa: Path, out: Path, kind: str = "probing") -> Path:
    try:
        tool = find_kenlm_tool("build_binary")
    except KenlmToolMissing as exc:
        pytest.skip(str(exc))
    subprocess.run([str(tool), "-S", "16M", kind, str(arpa), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture()
def binary(tmp_path) -> Path:
    """A valid probing binary of kenlm's own test model (2.9 kB)."""
    return _build_binary(shared_file("text", "kenlm_test.arpa"), tmp_path / "valid.binary")


def _flipped(path: Path, start: int, length: int, out: Path) -> Path:
    data = bytearray(path.read_bytes())
    for i in range(start, min(start + length, len(data))):
        data[i] ^= 0xFF
    out.write_bytes(bytes(data))
    return out


def _kenlm_train_dataset(root: Path, model: Path) -> Path:
    """A published kenlm-train dataset holding `model` as en/model.binary (its manifest records the sha256)."""
    with DatasetWriter(root, "kenlm-train", "1", "f" * 64, {}, []) as w:
        (w.tmp / "en").mkdir()
        shutil.copyfile(model, w.tmp / "en" / "model.binary")
        return w.publish(counts={"languages": 1})


# Flipping these bytes of the tiny probing binary fills a hash table: kenlm loads it, then loops forever at
# 100 % CPU on the first lookup that lands there, deaf to SIGTERM (the 11-minute hang of the issue).
HANGING_FLIP = (2144, 256)


@pytest.mark.parametrize("damage", ["truncated", "byte-flipped", "last bytes cut"])
def test_a_damaged_kenlm_train_model_is_refused_by_its_sha256(tmp_path, binary, damage):
    dataset = _kenlm_train_dataset(tmp_path / "data", binary)
    model = dataset / "en" / "model.binary"
    model.chmod(0o644)
    data = model.read_bytes()
    if damage == "truncated":
        model.write_bytes(data[: len(data) // 2])
    elif damage == "byte-flipped":
        _flipped(binary, *HANGING_FLIP, model)
    else:  # kenlm itself accepts this one and scores with whatever is left
        model.write_bytes(data[:-16])
    started = time.monotonic()
    with pytest.raises(ValueError) as err:
        load_scorers(PerplexityParams(models_dir=str(dataset)))
    assert time.monotonic() - started < 5
    message = _one_line(err)
    assert str(model) in message
    assert "sha256" in message and "kenlm-train" in message and "--force" in message
    assert len(re.findall(r"\b[0-9a-f]{64}\b", message)) == 2  # the expected and the actual hash


def test_an_intact_kenlm_train_model_loads(tmp_path, binary):
    dataset = _kenlm_train_dataset(tmp_path / "data", binary)
    scorers = load_scorers(PerplexityParams(models_dir=str(dataset)))
    assert scorers["en"].perplexity("looking on a little more loin") > 1


@pytest.mark.parametrize("damage", ["hangs when scoring", "crashes when loading"])
def test_a_corrupted_explicit_model_is_an_error_within_the_time_limit(tmp_path, monkeypatch, damage):
    arpa = shared_file("text", "kenlm_test.arpa")
    if damage == "hangs when scoring":
        bad = _flipped(_build_binary(arpa, tmp_path / "ok.binary"), *HANGING_FLIP, tmp_path / "model.binary")
    else:  # a flipped trie binary makes kenlm segfault
        trie = _build_binary(arpa, tmp_path / "ok.binary", "trie")
        bad = _flipped(trie, trie.stat().st_size // 2, 64, tmp_path / "model.binary")
    monkeypatch.setattr(scorer_module, "CHECK_SECONDS", 2.0)
    started = time.monotonic()
    with pytest.raises(ValueError) as err:
        load_scorers(PerplexityParams(models={"en": str(bad)}))
    assert time.monotonic() - started < 10
    message = _one_line(err)
    assert str(bad) in message and "not a valid KenLM model or corrupted" in message


def test_a_valid_explicit_model_still_works_and_is_checked_once_per_process(tmp_path, binary, monkeypatch):
    checks = []
    real_run = subprocess.run
    monkeypatch.setattr(scorer_module.subprocess, "run", lambda *a, **k: checks.append(a) or real_run(*a, **k))
    first = PerplexityScorer(binary)
    second = PerplexityScorer(str(binary))
    assert first.model is second.model
    assert first.perplexity("looking on a little more loin") == pytest.approx(
        PerplexityScorer(shared_file("text", "kenlm_test.arpa")).perplexity("looking on a little more loin"),
        rel=1e-4)
    assert len(checks) == 2  # the binary once, the ARPA once


@pytest.mark.parametrize(
    "text",
    [
        "\\data\\\nngram 1=3\n\n\\1-grams:\n-1.0\t<s>\n-1.0 </s>\nnot a number\tfoo\n\n\\end\\\n",
        "\\data\\\nngram 1=999999\n\n\\1-grams:\n-1.0\t<s>\t0\n\n\\end\\\n",
        "\\data\\\nngram 1=2\n",
    ],
    ids=["bad-line", "counts-lie", "cut-after-header"],
)
def test_a_malformed_arpa_file_is_a_one_line_error(tmp_path, text):
    bad = tmp_path / "model.arpa"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as err:
        PerplexityScorer(bad)
    message = _one_line(err)
    assert str(bad) in message and "not a valid KenLM model or corrupted" in message


# ----------------------------------------------------------------------------- checkpoints and configs (item 8)


@pytest.fixture()
def resumable_run(tmp_path):
    """run.json of a tiny pretrain run with a checkpoint at step 2, set to resume up to step 4."""
    from model.train import train
    from tasks.training import PretrainParams, write_run_config
    from tests.support import quiet_params, run_config

    cfg = run_config("pretrain", tmp_path / "run", quiet_params(PretrainParams, max_steps=2, checkpoint_interval=2))
    train(cfg)
    cfg["params"]["max_steps"] = 4
    return write_run_config(cfg), tmp_path / "run" / "step-000002"


def test_a_child_error_line_is_the_whole_launcher_error():
    import sys

    from tasks.training import run_streaming

    child = "import sys; print('INFO loading'); print('error: run/x.pt: not a chatlike checkpoint'); sys.exit(2)"
    with pytest.raises(RuntimeError) as err:
        run_streaming([sys.executable, "-c", child], lambda line: None)
    assert _one_line(err) == "training command exited with code 2: run/x.pt: not a chatlike checkpoint"


@pytest.mark.slow  # a tiny training run, then the launcher's child resuming it (about 20 s on 2 cores)
def test_a_pickled_optimizer_state_is_refused_in_one_line_through_the_launcher(resumable_run):
    import functools

    import torch

    from tasks.training import launch_training

    config, checkpoint = resumable_run
    optimizer = checkpoint / "optimizer.pt"
    torch.save({"embed_tokens.weight/exp_avg": functools.partial(print, "pwned")}, optimizer)
    lines: list[str] = []
    with pytest.raises(RuntimeError) as err:
        launch_training(["--config", str(config)], 1, lines.append, env={"OMP_NUM_THREADS": "1"})
    message = _one_line(err)
    assert str(optimizer) in message and "pickled" in message and "safety" in message
    assert "weights_only" not in message and "weights_only" not in "\n".join(lines)
    assert "delete this checkpoint folder" in message and "the run folder" in message


@pytest.mark.parametrize("content", ["tensors of another shape", "not a dict", "not a torch file"])
def test_an_optimizer_state_that_is_not_chatlikes_is_one_line(tmp_path, content):
    import torch

    from model.checkpoint import load_optimizer

    checkpoint = tmp_path / "run" / "step-000002"
    checkpoint.mkdir(parents=True)
    optimizer = checkpoint / "optimizer.pt"
    if content == "tensors of another shape":
        torch.save({"nothing/exp_avg": torch.zeros(3)}, optimizer)
    elif content == "not a dict":
        torch.save([1, 2, 3], optimizer)
    else:
        optimizer.write_bytes(b"PK\x03\x04 not really a zip")
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    names = {id(p): n for n, p in model.named_parameters()}
    with pytest.raises(ValueError) as err:
        load_optimizer(opt, names, checkpoint)
    message = _one_line(err)
    assert str(optimizer) in message


@pytest.fixture()
def tiny_model_dir(tmp_path) -> Path:
    from model.checkpoint import save_model
    from model.config import ModelConfig
    from model.transformer import GPT

    config = ModelConfig.preset("tiny", vocab_size=64, d_model=32, n_layers=1, n_heads=2, block_size=16)
    return save_model(GPT(config), tmp_path / "model")


@pytest.mark.parametrize(
    "change,field",
    [
        ({"vocab_size": 10**12}, "vocab_size"),
        ({"n_layers": 10**7}, "n_layers"),
        ({"d_model": 2**20, "n_heads": 1}, "d_model"),
        ({"d_model": -5}, "d_model"),
        ({"d_model": None}, "d_model"),  # None stands for a field that is missing from the file
        ({"n_embd": 32}, "n_embd"),
    ],
    ids=["vocab-1e12", "ten-million-layers", "huge-width", "negative-width", "missing-field", "unknown-field"],
)
def test_an_absurd_config_json_is_one_line_naming_the_file_and_field(tiny_model_dir, change, field):
    import json

    from model.checkpoint import load_model

    config = tiny_model_dir / "config.json"
    data = json.loads(config.read_text())
    for key, value in change.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    config.write_text(json.dumps(data))
    started = time.monotonic()
    with pytest.raises(ValueError) as err:
        load_model(tiny_model_dir)
    assert time.monotonic() - started < 5  # refused before anything is allocated
    message = _one_line(err)
    assert str(config) in message and field in message


# ------------------------------------------------------------------------------------------ a full disk (item 8)


def _full_disk_at(call: int, errno_: int = 28):
    """A write function that raises a full disk (ENOSPC, or EDQUOT) at its `call`-th call, and works before."""
    calls = []

    def write(real, *args, **kwargs):
        calls.append(1)
        if len(calls) >= call:
            import os

            raise OSError(errno_, os.strerror(errno_))
        return real(*args, **kwargs)

    return write


def _assert_disk_full_message(err: pytest.ExceptionInfo, path: Path) -> None:
    message = _one_line(err)
    assert str(path) in message and ("disk is full" in message or "quota" in message)
    assert "free" in message and "rerun" in message
    leftovers = [p.name for p in path.parent.rglob("*") if ".partial" in p.name or p.name.endswith(".tmp")]
    assert leftovers == []


@pytest.mark.parametrize("at_write", [1, 3])
def test_a_full_disk_while_writing_a_parquet_part_names_it_and_leaves_no_partial(tmp_path, monkeypatch, at_write):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from storage.atomic import DiskFullError
    from storage.parquet import ParquetShardWriter

    real = pq.ParquetWriter.write_table
    full = _full_disk_at(at_write)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", lambda self, *a, **k: full(real, self, *a, **k))
    part = tmp_path / "clean" / ".0123.tmp" / "part-00000.parquet"
    schema = pa.schema([("text", pa.string())])
    with pytest.raises(DiskFullError) as err:
        with ParquetShardWriter(part, schema, row_group_rows=10) as w:
            w.write_rows({"text": f"document {i}"} for i in range(50))
    _assert_disk_full_message(err, part)
    assert not part.exists()


def test_a_full_disk_while_writing_token_shards_names_it_and_leaves_no_partial(tmp_path):
    import numpy as np

    from storage.atomic import DiskFullError
    from storage.tokens import TokenShardWriter

    shard = tmp_path / "encode" / "train" / "shard-00000.bin"

    class FullFile:
        def __init__(self, fh, at: int):
            self.fh, self.at, self.writes = fh, at, 0

        def write(self, data):
            self.writes += 1
            if self.writes >= self.at:
                raise OSError(122, "Disk quota exceeded")
            return self.fh.write(data)

        def __getattr__(self, name):
            return getattr(self.fh, name)

    with pytest.raises(DiskFullError) as err:
        with TokenShardWriter(shard, np.uint16, buffer_tokens=8) as w:
            w._fh = FullFile(w._fh, at=2)
            for _ in range(10):
                w.add_document(np.arange(10))
    _assert_disk_full_message(err, shard)
    assert not shard.exists()


def test_a_full_disk_in_an_atomic_write_names_the_file(tmp_path):
    from storage.atomic import DiskFullError, write_atomic

    target = tmp_path / "run" / "model.safetensors"

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(b"x" * 1000)
        raise OSError(28, "No space left on device")

    with pytest.raises(DiskFullError) as err:
        write_atomic(target, write)
    _assert_disk_full_message(err, target)
    assert not target.exists()


def test_other_write_errors_are_left_as_they_are(tmp_path):
    from storage.atomic import DiskFullError, write_atomic

    def write(tmp: Path) -> None:
        raise PermissionError(13, "Permission denied", str(tmp))

    with pytest.raises(PermissionError) as err:
        write_atomic(tmp_path / "x.json", write)
    assert not isinstance(err.value, DiskFullError)


# ------------------------------------------------------------- hostile model inputs that already behave well


def test_regression_a_truncated_safetensors_file(tiny_model_dir):
    from model.checkpoint import load_model

    weights = tiny_model_dir / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ValueError) as err:
        load_model(tiny_model_dir)
    assert str(weights) in _one_line(err)


def test_regression_a_checkpoint_folder_without_config_json(tiny_model_dir):
    from model.checkpoint import load_model

    (tiny_model_dir / "config.json").unlink()
    with pytest.raises(FileNotFoundError) as err:
        load_model(tiny_model_dir)
    assert str(tiny_model_dir / "config.json") in _one_line(err)


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00garbage", b"[]"])
def test_regression_a_tokenizer_json_that_is_not_a_tokenizer(tmp_path, content):
    from storage.chat_format import load_tokenizer

    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_bytes(content)
    with pytest.raises(ValueError) as err:
        load_tokenizer(tokenizer)
    assert str(tokenizer) in _one_line(err)


def test_regression_an_imported_config_of_an_unknown_architecture(tmp_path):
    import json

    from model.hf import hf_model_config

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 64}))
    with pytest.raises(ValueError) as err:
        hf_model_config(tmp_path)
    message = _one_line(err)
    assert str(config) in message and "MambaForCausalLM" in message


def test_regression_a_config_json_that_is_not_json(tiny_model_dir):
    from model.checkpoint import load_model

    config = tiny_model_dir / "config.json"
    config.write_bytes(b"\x00\x01 not json")
    with pytest.raises(ValueError) as err:
        load_model(tiny_model_dir)
    assert str(config) in _one_line(err)
