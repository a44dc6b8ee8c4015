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
