"""The `kenlm-train` stage: one KenLM n-gram model per language, trained with `lmplz` on a reference corpus.

The reference text goes through the same normalisation and tokenisation as the documents scored later
(`tasks.perplexity.text.lm_lines`), is written one line per line to a temporary file, and `lmplz` (modified
Kneser-Ney) turns it into `model.arpa`; `build_binary` turns that into `model.binary`, the file the perplexity
stage loads. Output layout: `<out_dir>/<lang>/model.binary` (+ `model.arpa` unless `keep_arpa` is off).

`lmplz` and `build_binary` are compiled from the kenlm sdist into the virtual environment by `make setup`
(scripts/build_kenlm.sh); they are looked up beside the running Python first, then on PATH.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Literal

import pyarrow.compute as pc
from pydantic import Field, field_validator, model_validator

from storage.parquet import iter_batches, parquet_files, read_schema
from tasks.base import StrictModel
from tasks.perplexity.scorer import MODEL_ARPA, MODEL_BINARY
from tasks.perplexity.text import lm_lines

log = logging.getLogger(__name__)

STAGE = "kenlm-train"
STAGE_VERSION = "1"

TRAINING_TEXT = "train.txt"

_SETUP_HINT = "run `make setup` (or `bash scripts/build_kenlm.sh`) to build it from the kenlm sdist"
_LANG = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class KenlmToolMissing(FileNotFoundError):
    """`lmplz` or `build_binary` is not installed."""


class KenlmTrainError(RuntimeError):
    """`lmplz` or `build_binary` failed; the message ends with the tail of its stderr."""


class KenlmTrainParams(StrictModel):
    order: int = Field(5, ge=2, le=6, description="n-gram order (lmplz was built with KENLM_MAX_ORDER=6).")
    references: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Language → reference files or globs: .txt (one line per line), .jsonl/.json(.gz) "
        "(`text` field), .parquet (`text` column); .gz is read transparently.",
    )
    reference_dataset: str | None = Field(
        None, description="A document dataset (Parquet parts with `lang` and `text`): one model per language."
    )
    reference_languages: list[str] = Field(
        default_factory=list, description="Languages taken from `reference_dataset`; empty takes all of them."
    )
    max_lines_per_lang: int | None = Field(
        None, ge=1, description="Use at most this many lines (with tokens) per language."
    )
    prune: list[int] = Field(
        default_factory=list,
        description="lmplz --prune: per order, drop n-grams with count ≤ value, e.g. [0, 0, 1]; empty = none.",
    )
    memory: str = Field(
        "auto", description="lmplz sorting memory (-S), e.g. '20%' or '2G'; 'auto': from the text's size."
    )
    discount_fallback: Literal["auto", "always", "never"] = Field(
        "auto",
        description="lmplz --discount_fallback: 'auto' retries with it when the Kneser-Ney discounts cannot be "
        "estimated (small or repetitive corpora).",
    )
    binary_type: Literal["probing", "trie"] = "probing"
    keep_arpa: bool = True

    @field_validator("references")
    @classmethod
    def _languages(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for lang, paths in value.items():
            if not _LANG.match(lang):
                raise ValueError(f"reference language {lang!r} must be a short code like 'en' or 'ary_Latn'")
            if not paths:
                raise ValueError(f"references.{lang}: no file given")
        return value

    @field_validator("prune")
    @classmethod
    def _prune(cls, value: list[int]) -> list[int]:
        if value and value[0] != 0:
            raise ValueError("prune: lmplz cannot prune unigrams; the first value must be 0")
        if any(b < a for a, b in pairwise(value)) or any(v < 0 for v in value):
            raise ValueError(f"prune: values must be ≥ 0 and non-decreasing, got {value}")
        return value

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str) -> str:
        if value != "auto" and not re.fullmatch(r"\d+(\.\d+)?[%bKMGTPEZY]?", value):
            raise ValueError(f"memory {value!r}: expected 'auto', or e.g. '20%', '512M' or '2G' (lmplz -S syntax)")
        return value

    @model_validator(mode="after")
    def _prune_fits_order(self) -> KenlmTrainParams:
        if len(self.prune) > self.order:
            raise ValueError(f"prune has {len(self.prune)} values for an order-{self.order} model")
        return self

    def fingerprint_params(self) -> dict:
        # How much memory lmplz may sort with does not change the model.
        return self.model_dump(mode="json", exclude={"memory"})


@dataclass
class KenlmModelInfo:
    """One trained model: where it is and what went into it."""

    binary: str
    arpa: str | None
    order: int
    ngram_counts: list[int]  # n-grams per order, from the ARPA header
    lines_in: int = 0  # reference lines read
    # reference lines that normalise to nothing (blank, only control characters)
    lines_without_tokens: int = 0
    lines: int = 0  # lines with at least one token (written for lmplz)
    tokens: int = 0
    text_bytes: int = 0  # UTF-8 bytes of the normalised training text
    discount_fallback: bool = False
    lmplz_seconds: float = 0.0
    build_binary_seconds: float = 0.0
    seconds: float = 0.0
    binary_bytes: int = 0
    binary_sha256: str = ""
    lang: str | None = None
    sources: list[str] = field(default_factory=list)

    @property
    def vocab_size(self) -> int:
        """Distinct tokens (the unigram count includes <s>, </s> and <unk>)."""
        return self.ngram_counts[0] - 3 if self.ngram_counts else 0

    def to_dict(self) -> dict:
        return {**asdict(self), "vocab_size": self.vocab_size}


def find_kenlm_tool(name: str) -> Path:
    """`lmplz` / `build_binary` beside the running Python (the venv's bin/), else on PATH."""
    beside = Path(sys.executable).parent / name  # not resolved: a venv's python is a symlink
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which(name)
    if found:
        return Path(found)
    raise KenlmToolMissing(
        f"KenLM's `{name}` was not found beside {sys.executable} nor on PATH; {_SETUP_HINT}"
    )


# --------------------------------------------------------------------------------------------------- reading


def resolve_reference_files(patterns: Iterable[str], lang: str = "?") -> list[Path]:
    """The files named by paths or globs, in a stable order; a pattern that names nothing is an error."""
    files: list[Path] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
        else:
            p = Path(pattern)
            matches = (
                sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else ([p] if p.exists() else [])
            )
        if not matches:
            raise ValueError(f"kenlm-train: reference for '{lang}': no file matches {pattern!r}")
        files.extend(matches)
    return files


def _open_text(path: Path) -> io.TextIOBase:
    raw = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115
    return io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline=None)


def iter_reference_lines(files: Iterable[str | os.PathLike], text_field: str = "text") -> Iterator[str]:
    """Raw text lines of reference files: plain text, JSON lines (`text_field`) or Parquet (`text` column).

    A file that cannot be read (missing, not UTF-8, broken JSON) raises ValueError naming it and the line.
    """
    for f in files:
        path = Path(f)
        name = path.name.lower()
        if name.endswith(".parquet"):
            yield from _parquet_lines(path, text_field)
            continue
        is_json = name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson", ".ndjson.gz"))
        lineno = 0
        try:
            with _open_text(path) as fh:
                for lineno, line in enumerate(fh, 1):  # noqa: B007 (lineno is used by the error message)
                    if not is_json:
                        yield line
                        continue
                    if not line.strip():
                        continue
                    record = json.loads(line)
                    text = record.get(text_field) if isinstance(record, dict) else None
                    if isinstance(text, str):
                        yield from text.splitlines()
        except FileNotFoundError:
            raise ValueError(f"kenlm-train: reference file not found: {path}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}:{lineno + 1}: reference text is not UTF-8 ({exc.reason})") from exc
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{lineno}: not a JSON line ({exc.msg})") from exc
        except (OSError, EOFError) as exc:
            raise ValueError(f"{path}: cannot read the reference file ({exc})") from exc


def _parquet_lines(path: Path, text_field: str, lang: str | None = None) -> Iterator[str]:
    try:
        names = read_schema(path).names
    except Exception as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc
    if text_field not in names:
        raise ValueError(f"{path}: no `{text_field}` column (columns: {', '.join(names)})")
    columns = [text_field] + (["lang"] if lang is not None else [])
    for batch in iter_batches(path, columns=columns):
        if lang is not None:
            batch = batch.filter(pc.equal(batch.column("lang"), lang))
        for text in batch.column(text_field).to_pylist():
            if text:
                yield from text.splitlines()


def dataset_languages(dataset: str | os.PathLike) -> list[str]:
    """The languages of a document dataset (its `lang` column), sorted."""
    parts = _dataset_parts(dataset)
    langs: set[str] = set()
    for batch in iter_batches(parts, columns=["lang"]):
        langs.update(v for v in pc.unique(batch.column("lang")).to_pylist() if v)
    return sorted(langs)


def _dataset_parts(dataset: str | os.PathLike) -> list[Path]:
    parts = parquet_files(dataset)
    if not parts:
        raise ValueError(f"kenlm-train: reference dataset {dataset} has no part-*.parquet file")
    names = read_schema(parts[0]).names
    missing = [c for c in ("lang", "text") if c not in names]
    if missing:
        raise ValueError(f"kenlm-train: reference dataset {dataset} lacks column(s) {', '.join(missing)}")
    return parts


def reference_sources(params: KenlmTrainParams) -> dict[str, list[Path]]:
    """Per language, the reference files (and dataset parts) that will be read; for fingerprints and manifests."""
    sources: dict[str, list[Path]] = {
        lang: resolve_reference_files(p, lang) for lang, p in params.references.items()
    }
    if params.reference_dataset:
        parts = _dataset_parts(params.reference_dataset)
        for lang in params.reference_languages or dataset_languages(params.reference_dataset):
            sources.setdefault(lang, []).extend(parts)
    return sources


# -------------------------------------------------------------------------------------------------- training


@dataclass
class _TextStats:
    lines_in: int = 0
    lines_without_tokens: int = 0
    lines: int = 0
    tokens: int = 0
    bytes: int = 0


def write_training_text(
    lines: Iterable[str], path: str | os.PathLike, max_lines: int | None = None
) -> _TextStats:
    """Normalise and tokenise `lines` into `path`, one line per line, tokens separated by one space."""
    stats = _TextStats()
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for raw in lines:
            stats.lines_in += 1
            written = 0
            for tokens in lm_lines(raw):
                text = " ".join(tokens) + "\n"
                out.write(text)
                written += 1
                stats.tokens += len(tokens)
                stats.bytes += len(text.encode("utf-8"))
            stats.lines += written
            stats.lines_without_tokens += written == 0
            if max_lines is not None and stats.lines >= max_lines:
                break
    return stats


# lmplz's sorting memory for memory "auto": this many bytes per byte of training text, at least AUTO_MEMORY_MIN
# and at most 20 % of the machine's memory (lmplz's own suggestion). The model is the same whatever lmplz sorts
# with (past it, lmplz sorts on disk, in -T); what it costs is time: asking for 20 % of 24 GB made lmplz take
# 0.9 GB and 1.87 s for a 5 MB reference text, against 89 MB and 1.31 s with 256 MB (the same ARPA file).
AUTO_MEMORY_PER_TEXT_BYTE = 40
AUTO_MEMORY_MIN = 256 << 20


def sorting_memory(memory: str, text_bytes: int) -> str:
    """lmplz's -S for `memory` ("auto": from the training text's size, see AUTO_MEMORY_PER_TEXT_BYTE)."""
    if memory != "auto":
        return memory
    want = max(AUTO_MEMORY_MIN, AUTO_MEMORY_PER_TEXT_BYTE * text_bytes)
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return "20%"
    return "20%" if want > total // 5 else f"{want >> 20}M"


def train_kenlm(
    lines: Iterable[str],
    out_dir: str | os.PathLike,
    order: int = 5,
    *,
    prune: list[int] | None = None,
    memory: str = "auto",
    discount_fallback: Literal["auto", "always", "never"] = "auto",
    binary_type: Literal["probing", "trie"] = "probing",
    keep_arpa: bool = True,
    keep_text: bool = False,
    max_lines: int | None = None,
    temp_dir: str | os.PathLike | None = None,
    name: str = "reference",
) -> KenlmModelInfo:
    """Train one model on raw text `lines` into `out_dir/model.arpa` and `out_dir/model.binary`.

    `keep_text` leaves the normalised training text as `out_dir/train.txt` (to inspect what lmplz saw).
    Raises ValueError when no line has a token, KenlmToolMissing when lmplz/build_binary are not installed, and
    KenlmTrainError (with the tail of the tool's stderr) when one of them fails.
    """
    t0 = time.perf_counter()
    lmplz = find_kenlm_tool("lmplz")
    build_binary = find_kenlm_tool("build_binary")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kenlm-", dir=temp_dir) as tmp:
        text_path = out / TRAINING_TEXT if keep_text else Path(tmp) / TRAINING_TEXT
        stats = write_training_text(lines, text_path, max_lines)
        if stats.lines == 0:
            raise ValueError(
                f"kenlm-train: the reference corpus for {name} is empty: {stats.lines_in} line(s) read, none "
                "with a word after normalisation"
            )
        arpa_tmp = Path(tmp) / MODEL_ARPA
        memory = sorting_memory(memory, text_path.stat().st_size)
        cmd = [str(lmplz), "-o", str(order), "-S", memory, "-T", tmp + os.sep, "--text", str(text_path)]
        cmd += ["--arpa", str(arpa_tmp)]
        if prune:
            cmd += ["--prune", *map(str, prune)]
        fallback = discount_fallback == "always"
        t1 = time.perf_counter()
        try:
            _run(cmd + (["--discount_fallback"] if fallback else []), "lmplz", name)
        except KenlmTrainError as exc:
            if discount_fallback != "auto" or "discount" not in str(exc).lower():
                raise
            log.warning(
                "kenlm-train %s: Kneser-Ney discounts not estimable (small corpus?); retrying lmplz with "
                "--discount_fallback",
                name,
            )
            fallback = True
            _run(cmd + ["--discount_fallback"], "lmplz", name)
        lmplz_seconds = time.perf_counter() - t1

        t2 = time.perf_counter()
        binary_tmp = Path(tmp) / MODEL_BINARY
        build_cmd = [str(build_binary), "-S", memory, "-T", tmp + os.sep, binary_type]
        _run(build_cmd + [str(arpa_tmp), str(binary_tmp)], "build_binary", name)
        build_seconds = time.perf_counter() - t2

        counts = read_arpa_counts(arpa_tmp)
        binary = out / MODEL_BINARY
        shutil.move(binary_tmp, binary)
        arpa: Path | None = None
        if keep_arpa:
            arpa = out / MODEL_ARPA
            shutil.move(arpa_tmp, arpa)
        elif (out / MODEL_ARPA).exists():
            (out / MODEL_ARPA).unlink()
    info = KenlmModelInfo(
        binary=str(binary),
        arpa=str(arpa) if arpa else None,
        order=order,
        ngram_counts=counts,
        lines_in=stats.lines_in,
        lines_without_tokens=stats.lines_without_tokens,
        lines=stats.lines,
        tokens=stats.tokens,
        text_bytes=stats.bytes,
        discount_fallback=fallback,
        lmplz_seconds=round(lmplz_seconds, 3),
        build_binary_seconds=round(build_seconds, 3),
        seconds=round(time.perf_counter() - t0, 3),
        binary_bytes=binary.stat().st_size,
        binary_sha256=_sha256(binary),
    )
    log.info(
        "kenlm-train %s: %d lines, %d tokens, %s n-grams in %.1f s (lmplz %.1f s)",
        name,
        info.lines,
        info.tokens,
        counts,
        info.seconds,
        info.lmplz_seconds,
    )
    return info


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _run(cmd: list[str], tool: str, name: str) -> None:
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True)
    if proc.returncode != 0:
        raise KenlmTrainError(
            f"kenlm-train {name}: {tool} failed (exit {proc.returncode}): {' '.join(cmd)}\n"
            + _stderr_tail(proc.stderr.decode("utf-8", "replace"))
        )


def _stderr_tail(stderr: str, lines: int = 12) -> str:
    # lmplz draws progress bars (----5---10… and ****); they say nothing about the failure
    useful = [ln for ln in stderr.splitlines() if ln.strip() and not re.fullmatch(r"[-*0-9\s]+", ln)]
    return "\n".join(useful[-lines:])


def read_arpa_counts(path: str | os.PathLike) -> list[int]:
    """The `ngram N=count` lines of an ARPA file's header, as [count of 1-grams, 2-grams, …]."""
    counts: dict[int, int] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"ngram (\d+)=(\d+)", line)
            if m:
                counts[int(m.group(1))] = int(m.group(2))
            elif counts and line.startswith("\\"):
                break
    return [counts[k] for k in sorted(counts)]


# --------------------------------------------------------------------------------------------- stage function


def train_reference_models(
    params: KenlmTrainParams, out_dir: str | os.PathLike, temp_dir: str | os.PathLike | None = None
) -> dict[str, KenlmModelInfo]:
    """Train one model per reference language into `out_dir/<lang>/`; returns each model's info."""
    sources = reference_sources(params)
    if not sources:
        raise ValueError("kenlm-train: no reference corpus configured (set references or reference_dataset)")
    infos: dict[str, KenlmModelInfo] = {}
    dataset_parts = set(_dataset_parts(params.reference_dataset)) if params.reference_dataset else set()
    for lang in sorted(sources):
        files = [p for p in sources[lang] if p not in dataset_parts]
        from_dataset = [p for p in sources[lang] if p in dataset_parts]

        def lines(
            files: list[Path] = files, parts: list[Path] = from_dataset, lang: str = lang
        ) -> Iterator[str]:
            yield from iter_reference_lines(files)
            for part in parts:
                yield from _parquet_lines(part, "text", lang=lang)

        info = train_kenlm(
            lines(),
            Path(out_dir) / lang,
            params.order,
            prune=params.prune,
            memory=params.memory,
            discount_fallback=params.discount_fallback,
            binary_type=params.binary_type,
            keep_arpa=params.keep_arpa,
            max_lines=params.max_lines_per_lang,
            temp_dir=temp_dir,
            name=f"'{lang}'",
        )
        info.lang = lang
        info.sources = [str(p) for p in sources[lang]]
        infos[lang] = info
    return infos


def summarize(infos: dict[str, KenlmModelInfo]) -> tuple[dict, dict]:
    """Manifest counts (reference lines in, lines trained on, lines without a token) and per-language stats.

    `out` can exceed `in - dropped_no_tokens` when a reference line holds Unicode line breaks (it becomes several).
    """
    totals: Counter = Counter()
    for info in infos.values():
        totals.update(
            in_=info.lines_in,
            out=info.lines,
            empty=info.lines_without_tokens,
            tokens=info.tokens,
            bytes_out=info.text_bytes,
        )
    counts = {
        "in": totals["in_"],
        "out": totals["out"],
        "dropped_no_tokens": totals["empty"],
        "tokens": totals["tokens"],
        "bytes_out": totals["bytes_out"],
        "languages": len(infos),
    }
    stats = {"models": {lang: info.to_dict() for lang, info in sorted(infos.items())}}
    return counts, stats
