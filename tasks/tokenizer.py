"""The `tokenizer` stage: train a byte-level BPE (HuggingFace `tokenizers`) on the sample and save `tokenizer.json`.

Choices, for chat and multilingual text (DESIGN §4):

- **Byte level**: the 256 byte values are the base alphabet, so any UTF-8 text (Arabic, emoji, typos) encodes
  with no unknown token and decodes back byte for byte. No normaliser: ingest already wrote NFC, and a
  normaliser would break the round trip.
- **Pre-tokeniser `chat`** (default): a GPT-4-style split regex, then byte-level mapping. Changes from the GPT-4
  pattern, each for text we actually have: combining marks (`\\p{M}`) stay with their letters, so vowelled Arabic
  (مَرْحَبًا) and other scripts with diacritics are not cut at every mark; up to two digits may sit inside or
  at the start of a word, so Arabizi (`sa7a`, `3lach`) and chat spellings (`2day`, `10am`) stay one word, while
  plain numbers still split into groups of up to three digits; both the straight and the curly apostrophe
  (`’`, what phones type) start an English contraction. Emoji, like other symbols, group with adjacent symbols
  (a skin-tone or ZWJ sequence is one pre-token), and BPE learns the frequent ones as single tokens.
  `gpt4` (the cl100k pattern) and `gpt2` (the ByteLevel default regex) are there to compare.
- **Special tokens** `<|startoftext|>`, `<|separator|>`, `<|endoftext|>`, `<|pad|>` get ids 0–3 and are
  registered as special: one id each, never split, skipped by `decode(..., skip_special_tokens=True)`. They are
  never produced from plain text: load the tokenizer with `load_tokenizer` (`storage.chat_format`, shared with
  the model), which sets `encode_special_tokens`, so a user typing "<|endoftext|>" gets ordinary tokens; the
  pipeline inserts special ids itself. (That flag is not stored in `tokenizer.json`; a bare
  `Tokenizer.from_file` would match the strings.)
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from storage.atomic import write_atomic

# the special tokens and tokenizer loading are shared with the model, so they live in storage (re-exported here)
from storage.chat_format import (  # noqa: F401
    BOS,
    EOT,
    PAD,
    SEP,
    SPECIAL_TOKENS,
    TOKENIZER_FILE,
    load_tokenizer,
    tokenizer_file,
)
from storage.fingerprint import hash_file
from storage.parquet import iter_batches
from tasks.base import StrictModel
from tasks.sample import document_key, nominal_threshold

STAGE = "tokenizer"
STAGE_VERSION = "1"
BYTE_ALPHABET = 256
MIN_VOCAB = BYTE_ALPHABET + len(SPECIAL_TOKENS)
TRAIN_BATCH_DOCS = 1_000
FALLBACK_COMPRESSION_BYTES = (
    1_000_000  # of training text kept to measure compression when nothing is held out
)

GPT4_SPLIT_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)
CHAT_SPLIT_PATTERN = (
    r"""['’](?i:[sdmt]|ll|ve|re)"""
    r"""|[^\r\n\p{L}\p{M}\p{N}]?+(?:\p{N}{1,2}(?=\p{L}))?[\p{L}\p{M}]+(?:\p{N}{1,2}[\p{L}\p{M}]+)*"""
    r"""|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{M}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)

log = logging.getLogger(__name__)

PreTokenizer = Literal["chat", "gpt4", "gpt2"]


class TokenizerParams(StrictModel):
    vocab_size: int = Field(16_384, description="Ids in all: 256 bytes + 4 specials + learned merges.")
    min_frequency: int = Field(2, ge=1, description="A pair seen fewer times is never merged.")
    pretokenizer: PreTokenizer = Field("chat", description="Split rule before BPE (see tasks/tokenizer.py).")
    heldout_fraction: float = Field(
        0.01, ge=0, lt=1, description="Documents (by hash of id) kept out of training to measure compression."
    )
    heldout_salt: str = "tokenizer-heldout"

    @field_validator("vocab_size")
    @classmethod
    def _vocab_holds_bytes_and_specials(cls, v: int) -> int:
        if v < MIN_VOCAB:
            raise ValueError(
                f"vocab_size {v} is smaller than the {BYTE_ALPHABET} byte symbols + {len(SPECIAL_TOKENS)} special "
                f"tokens = {MIN_VOCAB} that a byte-level BPE needs before its first merge"
            )
        return v


@dataclass
class TokenizerInfo:
    path: str
    sha256: str
    vocab_size: int
    requested_vocab_size: int
    special_ids: dict = field(default_factory=dict)
    pretokenizer: str = "chat"
    train_docs: int = 0
    train_bytes: int = 0
    empty_docs: int = 0
    heldout_docs: int = 0
    heldout_bytes: int = 0
    measured_bytes: int = 0
    measured_tokens: int = 0
    bytes_per_token: float = 0.0
    compression_on: str = "heldout"  # or "train" when no document was held out (a tiny sample)
    train_seconds: float = 0.0
    train_mb_per_s: float = 0.0


def _pre_tokenizer(kind: str) -> pre_tokenizers.PreTokenizer:
    if kind == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    pattern = CHAT_SPLIT_PATTERN if kind == "chat" else GPT4_SPLIT_PATTERN
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


def new_tokenizer(params: TokenizerParams) -> Tokenizer:
    """An untrained byte-level BPE with this stage's pre-tokeniser and decoder."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = _pre_tokenizer(params.pretokenizer)
    tok.decoder = decoders.ByteLevel()
    return tok


def special_token_ids(tok: Tokenizer) -> dict[str, int]:
    return {s: tok.token_to_id(s) for s in SPECIAL_TOKENS}


def _is_part(item: object) -> bool:
    if isinstance(item, os.PathLike):
        return True
    return isinstance(item, str) and item.endswith(".parquet") and "\n" not in item and Path(item).is_file()


def _documents(
    source: Iterable[str] | Sequence[str | os.PathLike] | str | os.PathLike,
) -> Iterator[tuple[str, str]]:
    """(id, text) pairs from Parquet parts (their `id` column) or from plain texts (keyed by the text itself)."""
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    items = iter(source)
    first = next(items, None)
    if first is None:
        return
    items = itertools.chain([first], items)
    if _is_part(first):
        for part in items:
            for batch in iter_batches(Path(part), columns=["id", "text"]):
                cols = batch.to_pydict()
                yield from zip(cols["id"], cols["text"], strict=True)
    else:
        for text in items:
            yield text, text


def _describe(source: object) -> str:
    """Where training text came from, for messages: the parts' folder, a file, or "tokenizer input"."""
    if isinstance(source, (str, os.PathLike)) and _is_part(source):
        return str(source)
    if isinstance(source, Sequence) and not isinstance(source, str) and source and _is_part(source[0]):
        folders = sorted({str(Path(p).parent) for p in source})
        return folders[0] if len(folders) == 1 else f"{folders[0]} (and {len(folders) - 1} more folders)"
    return "tokenizer input"


def train_tokenizer(
    source: Iterable[str] | Sequence[str | os.PathLike] | str | os.PathLike,
    out_dir: str | os.PathLike,
    params: TokenizerParams,
) -> TokenizerInfo:
    """Train on the documents of `source` (Parquet part paths, or an iterable of texts) and write
    `<out_dir>/tokenizer.json` (atomically). A held-out share of documents measures compression."""
    if params.vocab_size < MIN_VOCAB:  # also when the params were built without validation
        TokenizerParams(vocab_size=params.vocab_size)
    out_path = Path(out_dir) / TOKENIZER_FILE
    heldout_threshold = nominal_threshold(params.heldout_fraction) if params.heldout_fraction > 0 else 0
    info = TokenizerInfo(
        path=str(out_path),
        sha256="",
        vocab_size=0,
        requested_vocab_size=params.vocab_size,
        pretokenizer=params.pretokenizer,
    )
    heldout: list[str] = []
    head: list[str] = []  # the first training texts, to measure compression if nothing was held out
    head_bytes = 0

    def training_batches() -> Iterator[list[str]]:
        nonlocal head_bytes
        batch: list[str] = []
        for doc_id, text in _documents(source):
            if not text:
                info.empty_docs += 1
                continue
            nbytes = len(text.encode("utf-8"))
            if heldout_threshold and document_key(params.heldout_salt, doc_id) < heldout_threshold:
                heldout.append(text)
                info.heldout_docs += 1
                info.heldout_bytes += nbytes
                continue
            info.train_docs += 1
            info.train_bytes += nbytes
            if head_bytes < FALLBACK_COMPRESSION_BYTES:
                head.append(text)
                head_bytes += nbytes
            batch.append(text)
            if len(batch) >= TRAIN_BATCH_DOCS:
                yield batch
                batch = []
        if batch:
            yield batch

    tok = new_tokenizer(params)
    t0 = time.perf_counter()
    tok.train_from_iterator(training_batches(), trainer=_trainer(params))
    if info.train_docs == 0 and heldout:
        # a sample so small that every document fell in the held-out share: train on it rather than on nothing
        log.warning("tokenizer: all %d documents were held out; training on them", len(heldout))
        info.train_docs, info.train_bytes = info.heldout_docs, info.heldout_bytes
        info.heldout_docs = info.heldout_bytes = 0
        head, heldout = heldout, []
        tok = new_tokenizer(params)
        tok.train_from_iterator([head], trainer=_trainer(params))
    info.train_seconds = round(time.perf_counter() - t0, 3)
    if info.train_docs == 0:
        raise ValueError(
            f"{_describe(source)}: the sample is empty ({info.empty_docs} empty documents, no text); "
            "check the sample stage's output (sample.fraction, sample.min_bytes) and the stages before it"
        )
    info.train_mb_per_s = round(info.train_bytes / 1e6 / max(info.train_seconds, 1e-9), 3)

    tok.encode_special_tokens = True
    measured, info.compression_on = (heldout, "heldout") if heldout else (head, "train")
    info.measured_tokens = sum(len(e.ids) for e in tok.encode_batch_fast(measured, add_special_tokens=False))
    info.measured_bytes = sum(len(t.encode("utf-8")) for t in measured)
    info.bytes_per_token = round(info.measured_bytes / max(info.measured_tokens, 1), 4)
    info.vocab_size = tok.get_vocab_size()
    info.special_ids = special_token_ids(tok)

    write_atomic(out_path, lambda tmp: tok.save(str(tmp), pretty=True))
    info.sha256 = hash_file(out_path)
    log.info(
        "tokenizer: %d ids from %s documents (%.1f MB) in %.1f s (%.2f MB/s); %.3f bytes/token on %s",
        info.vocab_size,
        f"{info.train_docs:,}",
        info.train_bytes / 1e6,
        info.train_seconds,
        info.train_mb_per_s,
        info.bytes_per_token,
        info.compression_on,
    )
    return info


def _trainer(params: TokenizerParams) -> trainers.BpeTrainer:
    return trainers.BpeTrainer(
        vocab_size=params.vocab_size,
        min_frequency=params.min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
