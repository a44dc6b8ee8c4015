"""The `encode` stage: documents → token shards `{train,val}/shard-NNNNN.bin` + `.idx` (DESIGN §3).

Input part i becomes `train/shard-0000i.bin` and `val/shard-0000i.bin` (a split that receives no document in that
part gets no file), so the shards are resumable one by one and the same input always gives the same bytes.
Each document is its tokens followed by `<|endoftext|>`; the `.idx` holds each document's end offset, that
separator included. A document goes to `val` iff the hash of its id (salted) falls below `val_fraction · 2^64`,
so the split does not depend on shard layout or on the order documents arrive in.

Text is encoded with `encode_batch_fast` (the Rust side, no offsets). That call uses HuggingFace's own thread
pool, one thread per core unless `RAYON_NUM_THREADS` says otherwise; the workers of `runner.kind: process` set
it to their share of the cores (`flows.stage_runner.share_cores`), so one worker alone already uses every core.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from storage.fingerprint import hash_file
from storage.parquet import iter_batches, read_schema
from storage.tokens import TokenShardError, TokenShardWriter, check_vocab_fits, dtype_for_vocab
from tasks.base import StrictModel
from tasks.sample import below, document_keys, nominal_threshold
from tasks.shard_drivers import ShardCounts, summarize
from tasks.tokenizer import EOT, load_tokenizer, special_token_ids, tokenizer_file

STAGE = "encode"
STAGE_VERSION = "1"
SPLITS = ("train", "val")
ENCODE_BATCH_DOCS = 512


class EncodeParams(StrictModel):
    val_fraction: float = Field(0.005, ge=0, lt=1, description="Share of documents (by hash of id) in `val`.")
    split_salt: str = Field(
        "encode-val", description="Salt of the train/val hash (a different one re-draws val)."
    )
    dtype: Literal["auto", "uint16", "uint32"] = Field(
        "auto", description="Token shard dtype; auto = uint16 when the vocabulary fits, else uint32."
    )


def shard_name(index: int) -> str:
    return f"shard-{index:05d}.bin"


def shard_path(out_dir: str | Path, split: str, index: int) -> Path:
    return Path(out_dir) / split / shard_name(index)


def _batches(in_part: str, size: int) -> Iterator[tuple[list[str], list[str]]]:
    for batch in iter_batches(Path(in_part), columns=["id", "text"], batch_size=size):
        cols = batch.to_pydict()
        yield cols["id"], cols["text"]


def encode_shard(
    in_part: str, tokenizer_path: str, out_dir: str, shard_index: int, params: EncodeParams
) -> ShardCounts:
    """Encode one Parquet part into this shard index's train and val token shards under `out_dir`.

    `extra` counts per split the documents, tokens (separators included) and text bytes written; `info` holds
    the shard's index, dtype, vocabulary size, special ids, tokenizer hash and the files written.
    """
    schema = read_schema(in_part)
    missing = [c for c in ("id", "text") if schema.get_field_index(c) < 0]
    if missing:
        raise ValueError(
            f"{in_part}: not a document part (no {' or '.join(repr(c) for c in missing)} column)"
        )
    tok = load_tokenizer(tokenizer_path)
    vocab_size = tok.get_vocab_size()
    try:
        dtype = (
            dtype_for_vocab(vocab_size)
            if params.dtype == "auto"
            else check_vocab_fits(vocab_size, params.dtype)
        )
    except TokenShardError as e:
        raise TokenShardError(
            f"{tokenizer_file(tokenizer_path)}: {e} (encode.dtype is {params.dtype!r})"
        ) from None
    eot = tok.token_to_id(EOT)
    val_threshold = nominal_threshold(params.val_fraction) if params.val_fraction > 0 else 0
    result = ShardCounts(in_part=str(in_part), bytes_out=None, info={
        "shard_index": shard_index,
        "dtype": dtype.name,
        "vocab_size": vocab_size,
        "tokenizer_sha256": hash_file(tokenizer_file(tokenizer_path)),
        "special_ids": special_token_ids(tok),
    })
    for name in ("docs", "tokens", "text_bytes"):
        result.tally_each(name, dict.fromkeys(SPLITS, 0))
    writers: dict[str, TokenShardWriter] = {}
    try:
        for ids, texts in _batches(in_part, ENCODE_BATCH_DOCS):
            result.docs_in += len(texts)
            keep = [i for i, t in enumerate(texts) if t]
            for _ in range(len(texts) - len(keep)):
                result.drop("empty_text", 0)
            if not keep:
                continue
            texts = [texts[i] for i in keep]
            is_val = (
                below(document_keys(params.split_salt, [ids[i] for i in keep]), val_threshold)
                if val_threshold
                else np.zeros(len(keep), dtype=bool)
            )
            encodings = tok.encode_batch_fast(texts, add_special_tokens=False)
            for split, want in (("train", False), ("val", True)):
                rows = np.flatnonzero(is_val == want).tolist()
                if not rows:
                    continue
                flat: list[int] = []
                lengths = np.empty(len(rows), dtype=np.int64)
                for j, r in enumerate(rows):
                    doc_ids = encodings[r].ids
                    flat.extend(doc_ids)
                    flat.append(eot)
                    lengths[j] = len(doc_ids) + 1
                    result.tally_each("text_bytes", {split: len(texts[r].encode("utf-8"))})
                if split not in writers:
                    writers[split] = TokenShardWriter(shard_path(out_dir, split, shard_index), dtype)
                writers[split].add_documents(np.array(flat, dtype=dtype), lengths)
                result.tally_each("docs", {split: len(rows)})
                result.tally_each("tokens", {split: len(flat)})
                result.docs_out += len(rows)
            result.bytes_in += sum(len(t.encode("utf-8")) for t in texts)
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    files = []
    for split, w in writers.items():
        w.close()
        files += [f"{split}/{w.path.name}", f"{split}/{w.idx_path.name}"]
    result.info["files"] = files
    return result


def summarize_encode(results: Sequence[ShardCounts]) -> tuple[dict, dict]:
    """Counts (documents, tokens per split) and the stats a reader of the shards needs (dtype, vocab, specials,
    tokenizer fingerprint) for the manifest."""
    if not results:
        return {"in": 0, "out": 0}, {}
    for key in ("dtype", "vocab_size", "tokenizer_sha256"):
        values = {r.info[key] for r in results}
        if len(values) > 1:
            raise ValueError(
                f"encode: shards disagree on {key} ({sorted(map(str, values))}); rerun with force"
            )
    first = results[0].info

    def stats(total: ShardCounts, shards: Sequence[ShardCounts]) -> dict:
        docs, tokens = total.extra["docs"], total.extra["tokens"]
        text_tokens = sum(tokens.values()) - sum(docs.values())  # without the separators
        return {
            "dtype": first["dtype"],
            "vocab_size": first["vocab_size"],
            "special_ids": first["special_ids"],
            "eot_id": first["special_ids"].get(EOT),
            "tokenizer_sha256": first["tokenizer_sha256"],
            "tokens": tokens,
            "documents": docs,
            "shards": {s: sum(1 for r in shards if r.extra["docs"].get(s)) for s in SPLITS},
            "bytes_per_token": (
                round(sum(total.extra["text_bytes"].values()) / text_tokens, 4) if text_tokens else None
            ),
        }

    return summarize(results, counted={"docs": {}, "tokens": {}, "dropped": {}}, stats=stats)
