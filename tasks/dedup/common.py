"""What the four dedup sub-stages share: text normalisation, paragraphs and word n-grams, 64-bit hashing,
atomic side files, the rejected/removed-span schemas and the per-shard filter that applies a decision.

Every sub-stage writes two kinds of record of what it removed, so a user can always answer "why is this gone
and what was kept instead?":

- whole documents go to the shard's `rejected` part with `reason` and `duplicate_of` (the survivor's id);
- pieces cut out of kept documents (paragraphs, repeated substrings) go to an optional `spans` part: one row
  per removed span with the document id, character offsets in the text as it was, the removed text, the
  reason and the survivor's id.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from storage.parquet import ROW_GROUP_ROWS, ParquetShardWriter, read_schema
from storage.schemas import REJECT_REASON_FIELD, with_reason

DUPLICATE_OF_FIELD = pa.field("duplicate_of", pa.string())

# One row per span removed from a document that was kept.
SPAN_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("start", pa.int64(), nullable=False),  # character offsets in the text before removal
        pa.field("end", pa.int64(), nullable=False),
        pa.field("bytes", pa.int64(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        DUPLICATE_OF_FIELD,
    ]
)

_MASK64 = (1 << 64) - 1
_WORD_RE = re.compile(r"\w+")
_PUNCT_RE = re.compile(r"[^\w\s]+")
_DIGIT_RE = re.compile(r"\d")
_SPACE_RE = re.compile(r"\s+")
_COMBINING_RE = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


# ---------------------------------------------------------------------------------------------------------
# text


def normalize_text(text: str) -> str:
    """CCNet-style normalisation of one line or paragraph: lower case, accents stripped, every digit → 0,
    punctuation removed, whitespace collapsed. Two strings equal after this are treated as the same text."""
    text = unicodedata.normalize("NFD", text.lower())
    text = _COMBINING_RE.sub("", text)
    text = _DIGIT_RE.sub("0", text)
    text = _PUNCT_RE.sub(" ", text)
    return _SPACE_RE.sub(" ", text).strip()


def normalize_document(text: str) -> str:
    """A document normalised paragraph by paragraph, empty paragraphs left out, joined with newlines.

    Keeping the paragraph structure means two documents equal after normalisation have the same list of
    normalised paragraphs, which lets document- and paragraph-level exact dedup agree with each other.
    """
    return "\n".join(p for p in (normalize_text(line) for line in text.split("\n")) if p)


@dataclass(frozen=True)
class Paragraph:
    """A newline-delimited paragraph: `text` without its newline; [start, end) covers the newline too."""

    index: int
    start: int
    end: int
    text: str


def split_paragraphs(text: str) -> list[Paragraph]:
    """Paragraphs as Dolma/BFF and CCNet see them: split on "\\n"; each span includes its trailing newline."""
    out: list[Paragraph] = []
    start = 0
    for i, line in enumerate(text.split("\n")):
        end = min(start + len(line) + 1, len(text))
        out.append(Paragraph(i, start, end, line))
        start = end
    return out


def words(text: str) -> list[str]:
    """Lower-cased word tokens (Unicode letters and digits) used for shingles and n-grams."""
    return _WORD_RE.findall(text.lower())


# ---------------------------------------------------------------------------------------------------------
# hashing


def hash64(data: str | bytes) -> int:
    """A stable 64-bit hash (xxh3) of a string's UTF-8 bytes."""
    return xxhash.xxh3_64_intdigest(data.encode("utf-8") if isinstance(data, str) else data)


def hash128(data: str | bytes) -> tuple[int, int]:
    """A stable 128-bit hash (xxh3) as (high, low) 64-bit halves: collisions are negligible at any corpus size."""
    h = xxhash.xxh3_128_intdigest(data.encode("utf-8") if isinstance(data, str) else data)
    return h >> 64, h & _MASK64


def word_hashes(tokens: Sequence[str]) -> np.ndarray:
    """One 64-bit hash per word (uint64)."""
    fn = xxhash.xxh3_64_intdigest
    return np.fromiter((fn(w.encode("utf-8")) for w in tokens), dtype=np.uint64, count=len(tokens))


def normalize_word(word: str) -> str:
    """A lower-cased word as near-duplicate detection compares it (datatrove's `simplify_text` does the same):
    accents and other combining marks removed (é → e, Arabic harakat dropped), every digit → 0, so copies that
    differ only in dates, prices, counts or diacritics share their shingles."""
    decomposed = unicodedata.normalize("NFD", word)
    if not decomposed.isascii():
        decomposed = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _DIGIT_RE.sub("0", decomposed)


def batch_word_hashes(texts: Sequence[str], normalize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Word hashes of many texts at once: (concatenated uint64 hashes, words per text).

    Equal to `word_hashes(words(t))` for each text (of `normalize_word` of each word with `normalize`), but
    each distinct word of the batch is hashed (and normalised) once: Arrow dictionary-encodes the batch's
    words, Zipf's law does the rest.
    """
    tokens = [words(t) for t in texts]
    counts = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
    flat = [w for ws in tokens for w in ws]
    if not flat:
        return np.empty(0, dtype=np.uint64), counts
    encoded = pc.dictionary_encode(pa.array(flat, pa.string()))
    fn = xxhash.xxh3_64_intdigest
    distinct = encoded.dictionary.to_pylist()
    if normalize:
        distinct = [normalize_word(w) for w in distinct]
    hashes = np.fromiter((fn(w.encode("utf-8")) for w in distinct), dtype=np.uint64, count=len(distinct))
    return hashes[np.asarray(encoded.indices)], counts


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a bijective mixer that spreads every input bit over the whole 64-bit word."""
    x = x.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= _MIX1
        x ^= x >> np.uint64(27)
        x *= _MIX2
        x ^= x >> np.uint64(31)
    return x


def ngram_hashes(word_h: np.ndarray, n: int, short_as_one: bool = True) -> np.ndarray:
    """64-bit hashes of the word n-grams of one sequence of word hashes, in order (vectorised).

    A sequence shorter than `n` gives one n-gram made of all its words when `short_as_one`, else none.
    The hash depends on the order of the words: each position is rotated differently before mixing.
    """
    m = len(word_h)
    if m == 0:
        return np.empty(0, dtype=np.uint64)
    k = n if m >= n else (m if short_as_one else 0)
    if k == 0:
        return np.empty(0, dtype=np.uint64)
    count = m - k + 1
    with np.errstate(over="ignore"):
        acc = np.full(count, np.uint64(k), dtype=np.uint64) * _GOLDEN
        for j in range(k):
            acc = mix64(acc ^ word_h[j : j + count])
    return acc


def batch_ngram_hashes(word_h: np.ndarray, counts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`ngram_hashes` of many word sequences given concatenated: (concatenated n-gram hashes, n-grams per text).

    The n-grams of all texts with at least n words are mixed in one vectorised pass over the concatenation
    (n-grams straddling two texts are computed and thrown away); shorter texts give one n-gram each.
    """
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    is_long = counts >= n
    out_counts = np.where(is_long, counts - n + 1, np.minimum(counts, 1))
    out_ends = np.cumsum(out_counts)
    out = np.empty(int(out_ends[-1]) if len(out_ends) else 0, dtype=np.uint64)
    total = len(word_h)
    if is_long.any() and total >= n:
        span = total - n + 1
        with np.errstate(over="ignore"):
            acc = np.full(span, np.uint64(n), dtype=np.uint64) * _GOLDEN
            for j in range(n):
                acc = mix64(acc ^ word_h[j : j + span])
        long_docs = np.flatnonzero(is_long)
        c = out_counts[long_docs]
        offset_in_doc = np.arange(int(c.sum()), dtype=np.int64) - np.repeat(np.cumsum(c) - c, c)
        src = np.repeat(starts[long_docs], c) + offset_in_doc
        dst = np.repeat(out_ends[long_docs] - c, c) + offset_in_doc
        out[dst] = acc[src]
    # texts shorter than n words: one n-gram of all their words, vectorised per length
    short = np.flatnonzero(~is_long & (counts > 0))
    for m in np.unique(counts[short]).tolist():
        docs = short[counts[short] == m]
        with np.errstate(over="ignore"):
            acc = np.full(len(docs), np.uint64(m), dtype=np.uint64) * _GOLDEN
            for j in range(m):
                acc = mix64(acc ^ word_h[starts[docs] + j])
        out[out_ends[docs] - 1] = acc
    return out, out_counts


# ---------------------------------------------------------------------------------------------------------
# files


def atomic_path(path: str | os.PathLike) -> tuple[Path, Path]:
    """(final path, temporary sibling): write the temporary one, then `os.replace` it into place."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    return final, final.with_name(final.name + ".partial")


def write_table_atomic(path: str | os.PathLike, table: pa.Table) -> Path:
    """A small Parquet side file (hashes, pairs, clusters) written whole, deterministic and atomic."""
    final, tmp = atomic_path(path)
    pq.write_table(table, tmp, compression="zstd", compression_level=3, row_group_size=1 << 20)
    os.replace(tmp, final)
    return final


def save_npy_atomic(path: str | os.PathLike, array: np.ndarray) -> Path:
    final, tmp = atomic_path(path)
    with open(tmp, "wb") as fh:
        np.save(fh, np.ascontiguousarray(array), allow_pickle=False)
    os.replace(tmp, final)
    return final


class DedupInputError(ValueError):
    """An input or side file that cannot be read; the message names the file and what is wrong."""


def doc_batches(
    path: str | os.PathLike, columns: Sequence[str] | None = None, batch_size: int = ROW_GROUP_ROWS
) -> Iterator[pa.RecordBatch]:
    """Record batches of a document part; a missing, unreadable or column-less file fails naming the file."""
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise DedupInputError(f"{path}: cannot read this Parquet part ({e})") from e
    if columns:
        missing = [c for c in columns if c not in pf.schema_arrow.names]
        if missing:
            raise DedupInputError(
                f"{path}: no column {', '.join(missing)} (columns: {', '.join(pf.schema_arrow.names)})"
            )
    batches = pf.iter_batches(batch_size=batch_size, columns=list(columns) if columns else None)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as e:
            raise DedupInputError(f"{path}: cannot read this Parquet part ({e})") from e
        yield batch


def part_schema(path: str | os.PathLike) -> pa.Schema:
    try:
        schema = read_schema(path)
    except (pa.ArrowException, OSError) as e:
        raise DedupInputError(f"{path}: cannot read this Parquet part ({e})") from e
    missing = [c for c in ("id", "text") if c not in schema.names]
    if missing:
        raise DedupInputError(f"{path}: no column {', '.join(missing)}: not a document dataset")
    return schema


def read_tables(
    paths: Sequence[str | os.PathLike], columns: Sequence[str] | None = None, filters=None
) -> pa.Table:
    """Concatenate Parquet side files (in the order given; callers sort them)."""
    tables = []
    for p in paths:
        try:
            tables.append(pq.read_table(p, columns=list(columns) if columns else None, filters=filters))
        except (pa.ArrowException, OSError) as e:
            raise DedupInputError(
                f"{p}: cannot read this dedup side file ({e}); rerun the phase that writes it"
            ) from e
    if not tables:
        raise ValueError("no input files given")
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def load_array(path: str | os.PathLike, mmap: bool = False) -> np.ndarray:
    """A .npy side file written by an earlier phase (never pickled objects)."""
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise DedupInputError(
            f"{path}: cannot read this dedup side file ({e}); rerun the phase that writes it"
        ) from e


def available_memory_bytes() -> int:
    """Memory the kernel says can be allocated now without swapping (MemAvailable); a guess when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4 << 30


# ---------------------------------------------------------------------------------------------------------
# the per-shard filter


def rejected_schema(schema: pa.Schema) -> pa.Schema:
    """The input schema plus `reason` and `duplicate_of` (the id of the document that was kept instead)."""
    out = with_reason(schema)
    if out.get_field_index(DUPLICATE_OF_FIELD.name) < 0:
        out = out.append(DUPLICATE_OF_FIELD)
    return out


@dataclass
class SpanRemoval:
    """A piece of a kept document to cut out: character offsets [start, end) of the original text."""

    start: int
    end: int
    reason: str
    duplicate_of: str | None = None


@dataclass
class Decision:
    """What to do with one document: keep (with optional spans removed) or drop it for `reason`."""

    drop_reason: str | None = None
    duplicate_of: str | None = None
    spans: list[SpanRemoval] = field(default_factory=list)


KEEP = Decision()


@dataclass
class DedupShardResult:
    """What a dedup filter did to one shard (plain JSON-able fields: the flow stores it with `asdict`)."""

    part: str
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    docs_modified: int = 0
    dropped: dict = field(default_factory=dict)  # reason → documents dropped
    dropped_bytes: dict = field(default_factory=dict)  # reason → UTF-8 bytes of the dropped documents
    spans_removed: dict = field(default_factory=dict)  # reason → spans cut out of kept documents
    span_bytes_removed: dict = field(default_factory=dict)  # reason → bytes cut out of kept documents
    stats: dict = field(default_factory=dict)


def cut_spans(text: str, spans: Sequence[SpanRemoval]) -> str:
    """The text with the given (non-overlapping, any order) character spans removed."""
    if not spans:
        return text
    pieces = []
    pos = 0
    for s in sorted(spans, key=lambda s: s.start):
        if s.start > pos:
            pieces.append(text[pos : s.start])
        pos = max(pos, s.end)
    pieces.append(text[pos:])
    return "".join(pieces)


def filter_shard(
    in_part: str,
    out_part: str,
    rejected_part: str,
    decide: Callable[[int, str, str], Decision],
    spans_part: str | None = None,
    min_chars_after: int = 1,
    emptied_reason: str = "emptied",
) -> DedupShardResult:
    """Apply per-document decisions to one Parquet part, batch by batch.

    `decide(row_index, doc_id, text)` says keep / drop / cut spans. A kept document whose text ends up
    shorter than `min_chars_after` characters (stripped) after its spans are cut is dropped with
    `emptied_reason`; its survivor is the `duplicate_of` of the longest span removed. Kept rows keep every
    input column; rejected rows get `reason` and `duplicate_of`; removed spans go to `spans_part` when given.
    """
    schema = part_schema(in_part)
    rej_schema = rejected_schema(schema)
    result = DedupShardResult(part=out_part)
    dropped: Counter = Counter()
    dropped_bytes: Counter = Counter()
    spans_n: Counter = Counter()
    spans_b: Counter = Counter()
    span_writer = ParquetShardWriter(spans_part, SPAN_SCHEMA) if spans_part else None
    row0 = 0
    try:
        with (
            ParquetShardWriter(out_part, schema) as kept,
            ParquetShardWriter(rejected_part, rej_schema) as rejected,
        ):
            for batch in doc_batches(in_part):
                ids = batch.column("id").to_pylist()
                texts = batch.column("text").to_pylist()
                keep = np.ones(len(texts), dtype=bool)
                new_texts = list(texts)
                reasons: list[str] = []
                dup_of: list[str | None] = []
                changed = False
                for j, (doc_id, text) in enumerate(zip(ids, texts, strict=True)):
                    nbytes = len(text.encode("utf-8"))
                    result.docs_in += 1
                    result.bytes_in += nbytes
                    d = decide(row0 + j, doc_id, text)
                    reason, survivor = d.drop_reason, d.duplicate_of
                    if reason is None and d.spans:
                        new = cut_spans(text, d.spans)
                        if len(new.strip()) < max(min_chars_after, 1):
                            reason = emptied_reason
                            survivor = max(d.spans, key=lambda s: s.end - s.start).duplicate_of
                        else:
                            for s in sorted(d.spans, key=lambda s: s.start):
                                piece = text[s.start : s.end]
                                b = len(piece.encode("utf-8"))
                                spans_n[s.reason] += 1
                                spans_b[s.reason] += b
                                if span_writer is not None:
                                    span_writer.write_row(
                                        {
                                            "id": doc_id,
                                            "reason": s.reason,
                                            "start": s.start,
                                            "end": s.end,
                                            "bytes": b,
                                            "text": piece,
                                            "duplicate_of": s.duplicate_of,
                                        }
                                    )
                            new_texts[j] = new
                            changed = True
                            result.docs_modified += 1
                    if reason is not None:
                        keep[j] = False
                        reasons.append(reason)
                        dup_of.append(survivor)
                        dropped[reason] += 1
                        dropped_bytes[reason] += nbytes
                    else:
                        result.docs_out += 1
                        result.bytes_out += (
                            len(new_texts[j].encode("utf-8")) if new_texts[j] is not text else nbytes
                        )
                row0 += len(texts)
                table = pa.Table.from_batches([batch])
                if changed:
                    table = table.set_column(
                        table.schema.get_field_index("text"),
                        table.schema.field("text"),
                        pa.array(new_texts, pa.string()),
                    )
                if keep.all():
                    kept.write_batch(table)
                    continue
                mask = pa.array(keep)
                kept.write_batch(table.filter(mask))
                gone = table.filter(pc.invert(mask))
                stale = [
                    c for c in (REJECT_REASON_FIELD.name, DUPLICATE_OF_FIELD.name) if c in gone.column_names
                ]
                gone = gone.drop_columns(stale)
                gone = gone.append_column(REJECT_REASON_FIELD, pa.array(reasons, pa.string()))
                gone = gone.append_column(DUPLICATE_OF_FIELD, pa.array(dup_of, pa.string()))
                rejected.write_batch(gone)
        if span_writer is not None:
            span_writer.close()
    except BaseException:
        if span_writer is not None:
            span_writer.abort()
        raise
    result.dropped = dict(sorted(dropped.items()))
    result.dropped_bytes = dict(sorted(dropped_bytes.items()))
    result.spans_removed = dict(sorted(spans_n.items()))
    result.span_bytes_removed = dict(sorted(spans_b.items()))
    return result


def summarize_results(results: Sequence[DedupShardResult]) -> tuple[dict, dict]:
    """Manifest counts and stats of a dedup sub-stage from its per-shard results.

    counts: `in`, `out`, `bytes_in`, `bytes_out`, `dropped_<reason>` (documents), `spans_removed_<reason>`;
    stats: bytes per reason, documents modified, and the share of input bytes removed.
    """
    dropped: Counter = Counter()
    dropped_b: Counter = Counter()
    spans_n: Counter = Counter()
    spans_b: Counter = Counter()
    for r in results:
        dropped.update(r.dropped)
        dropped_b.update(r.dropped_bytes)
        spans_n.update(r.spans_removed)
        spans_b.update(r.span_bytes_removed)
    bytes_in = sum(r.bytes_in for r in results)
    bytes_out = sum(r.bytes_out for r in results)
    counts = {
        "in": sum(r.docs_in for r in results),
        "out": sum(r.docs_out for r in results),
        "bytes_in": bytes_in,
        "bytes_out": bytes_out,
        **{f"dropped_{k}": v for k, v in sorted(dropped.items())},
        **{f"spans_removed_{k}": v for k, v in sorted(spans_n.items())},
    }
    stats = {
        "docs_modified": sum(r.docs_modified for r in results),
        "dropped_bytes": dict(sorted(dropped_b.items())),
        "span_bytes_removed": dict(sorted(spans_b.items())),
        "bytes_removed_fraction": round(1 - bytes_out / bytes_in, 6) if bytes_in else 0.0,
    }
    return counts, stats


def part_name(part_index: int) -> str:
    return f"part-{part_index:05d}"


def write_documents(path: str | os.PathLike, docs: Sequence[tuple[str, str]], source: str = "text") -> Path:
    """A document part (DOCUMENT_SCHEMA) from (id, text) pairs: small inputs for tests and benchmarks."""
    from storage.schemas import DOCUMENT_SCHEMA

    with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
        for doc_id, text in docs:
            w.write_row(
                {"id": doc_id, "text": text, "source": source, "url": None, "timestamp": None, "meta": None}
            )
    return Path(path)
