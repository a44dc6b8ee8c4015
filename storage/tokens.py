"""Token shards (DESIGN §3): raw little-endian token ids in `.bin` files plus `uint64` document end offsets in
`.idx` files, the writer that produces them atomically, and the readers that training and evaluation use.

A `.bin` file has no header, so `np.memmap(path, dtype=np.uint16, mode="r")` reads it exactly as nanoGPT does.
Its dtype is `uint16` when every id fits (vocabulary ≤ 65,536) and `uint32` otherwise. The `.idx` beside it holds
one end offset per document (in tokens, exclusive, the document's trailing `<|endoftext|>` included), so its last
value is the number of tokens in the `.bin` file; that is also how a reader recovers the dtype from the files
alone (bytes of `.bin` ÷ last end offset).

`RandomWindowSampler` draws nanoGPT-style random windows for pretraining; its stream is a pure function of
(seed, rank, batch number), so `state_dict()` is a counter and a resumed run continues with exactly the batches an
uninterrupted run would have drawn. `iter_sequential_windows` walks every token once for evaluation.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from storage.atomic import partial_path, raise_if_disk_full, replace_file

BIN_SUFFIX = ".bin"
IDX_SUFFIX = ".idx"
IDX_DTYPE = np.dtype("<u8")
SHARD_GLOB = "shard-*.bin"
IGNORE_INDEX = -100  # the target value PyTorch's cross-entropy skips by default
SAMPLER_STATE_VERSION = 1
OPEN_SHARDS = 64  # memmaps a sampler keeps open at once (each holds a file descriptor)

_DTYPES = {2: np.dtype("<u2"), 4: np.dtype("<u4")}


class TokenShardError(ValueError):
    """A token shard that cannot be written or read as asked (wrong dtype, missing index, too short…)."""


def dtype_for_vocab(vocab_size: int) -> np.dtype:
    """The smallest shard dtype that holds every id of a vocabulary: uint16 up to 65,536 ids, else uint32."""
    if vocab_size <= 0:
        raise TokenShardError(f"vocabulary size must be positive, got {vocab_size}")
    if vocab_size <= 1 << 16:
        return np.dtype("<u2")
    if vocab_size <= 1 << 32:
        return np.dtype("<u4")
    raise TokenShardError(f"a vocabulary of {vocab_size:,} ids does not fit in uint32 token shards")


def check_vocab_fits(vocab_size: int, dtype: np.dtype | str | type) -> np.dtype:
    """The little-endian dtype, or a clear error when ids of this vocabulary would not fit in it."""
    dt = _shard_dtype(dtype)
    limit = 1 << (8 * dt.itemsize)
    if vocab_size > limit:
        raise TokenShardError(
            f"a tokenizer with {vocab_size:,} ids does not fit {dt.name} token shards (at most {limit:,} ids); "
            f"use {dtype_for_vocab(vocab_size).name} (dtype 'auto') or a smaller vocabulary"
        )
    return dt


def _shard_dtype(dtype: np.dtype | str | type) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.kind != "u" or dt.itemsize not in _DTYPES:
        raise TokenShardError(f"token shards are uint16 or uint32, not {dt}")
    return _DTYPES[dt.itemsize]


def idx_path_for(bin_path: str | os.PathLike) -> Path:
    return Path(bin_path).with_suffix(IDX_SUFFIX)


class TokenShardWriter:
    """Writes one `.bin` + `.idx` pair; both appear under their final names only on `close()`.

        with TokenShardWriter(path, np.uint16) as w:
            w.add_document(ids)            # ids of one document, separator included if wanted
            w.add_documents(flat, lengths) # many documents at once

    Ids are checked against the dtype (an id that would wrap around is an error, never silent). On an exception
    inside the block the partial files are removed and nothing appears.
    """

    def __init__(
        self, bin_path: str | os.PathLike, dtype: np.dtype | str | type, buffer_tokens: int = 1 << 20
    ):
        self.path = Path(bin_path)
        if self.path.suffix != BIN_SUFFIX:
            raise TokenShardError(f"{self.path}: a token shard's name must end in {BIN_SUFFIX}")
        self.dtype = _shard_dtype(dtype)
        self.idx_path = idx_path_for(self.path)
        self._limit = 1 << (8 * self.dtype.itemsize)
        self._bin_partial = partial_path(self.path)
        self._idx_partial = partial_path(self.idx_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self._bin_partial, "wb")
        self._ends: list[np.ndarray] = []
        self._pending: list[np.ndarray] = []
        self._pending_tokens = 0
        self._buffer_tokens = buffer_tokens
        self.tokens = 0
        self.documents = 0
        self._closed = False

    def add_document(self, ids: Sequence[int] | np.ndarray) -> None:
        arr = np.asarray(ids)
        self.add_documents(arr, np.array([arr.size], dtype=np.int64))

    def add_documents(
        self, flat_ids: Sequence[int] | np.ndarray, lengths: Sequence[int] | np.ndarray
    ) -> None:
        """Append documents given as one flat id array and the length of each document in it."""
        flat = np.asarray(flat_ids)
        lens = np.asarray(lengths, dtype=np.int64)
        if lens.size and lens.min() < 0:
            raise TokenShardError(f"{self.path}: negative document length")
        if int(lens.sum()) != flat.size:
            raise TokenShardError(
                f"{self.path}: document lengths add up to {int(lens.sum())}, not {flat.size} ids"
            )
        if flat.size:
            lo, hi = int(flat.min()), int(flat.max())
            if lo < 0 or hi >= self._limit:
                bad = hi if hi >= self._limit else lo
                raise TokenShardError(f"{self.path}: token id {bad} does not fit {self.dtype.name} shards")
            self._pending.append(flat.astype(self.dtype, copy=False))
            self._pending_tokens += flat.size
        self._ends.append(self.tokens + np.cumsum(lens, dtype=np.uint64))
        self.tokens += flat.size
        self.documents += lens.size
        if self._pending_tokens >= self._buffer_tokens:
            self._flush()

    def _flush(self) -> None:
        for arr in self._pending:
            self._fh.write(arr.tobytes())
        self._pending.clear()
        self._pending_tokens = 0

    def close(self) -> Path:
        if self._closed:
            return self.path
        try:
            self._flush()
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            ends = np.concatenate(self._ends) if self._ends else np.zeros(0, dtype=IDX_DTYPE)
            with open(self._idx_partial, "wb") as fh:
                fh.write(ends.astype(IDX_DTYPE).tobytes())
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            self.abort()
            raise_if_disk_full(self.path, exc)
            raise
        # .bin first: a shard counts as complete only once its .idx is there too (see TokenShards)
        replace_file(self._bin_partial, self.path)
        replace_file(self._idx_partial, self.idx_path)
        self._closed = True
        return self.path

    def abort(self) -> None:
        if not self._fh.closed:
            with contextlib.suppress(OSError):  # dropped anyway (on a full disk, flushing the buffer fails too)
                self._fh.close()
        self._bin_partial.unlink(missing_ok=True)
        self._idx_partial.unlink(missing_ok=True)
        self._closed = True

    def __enter__(self) -> TokenShardWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
            raise_if_disk_full(self.path, exc)


def read_document_ends(bin_path: str | os.PathLike) -> np.ndarray:
    """The `uint64` end offsets of the documents of a shard (from its `.idx`)."""
    idx = idx_path_for(bin_path)
    if not idx.is_file():
        raise TokenShardError(f"{bin_path}: no {idx.name} beside it (an incomplete or foreign shard)")
    if idx.stat().st_size % IDX_DTYPE.itemsize:
        raise TokenShardError(f"{idx}: size is not a multiple of 8 bytes (not a uint64 offsets file)")
    return np.fromfile(idx, dtype=IDX_DTYPE)


def shard_dtype(bin_path: str | os.PathLike) -> np.dtype:
    """A shard's dtype, recovered from its size and its last document end offset."""
    ends = read_document_ends(bin_path)
    size = Path(bin_path).stat().st_size
    tokens = int(ends[-1]) if ends.size else 0
    if tokens == 0:
        if size:
            raise TokenShardError(f"{bin_path}: {size} bytes but its .idx lists no tokens")
        return _DTYPES[2]
    itemsize, rest = divmod(size, tokens)
    if rest or itemsize not in _DTYPES:
        raise TokenShardError(
            f"{bin_path}: {size} bytes for {tokens} tokens listed in its .idx; not a uint16 or uint32 shard"
        )
    return _DTYPES[itemsize]


def open_shard(bin_path: str | os.PathLike, dtype: np.dtype | str | type | None = None) -> np.ndarray:
    """A read-only memmap of a shard's tokens (dtype from the files when not given)."""
    dt = _shard_dtype(dtype) if dtype is not None else shard_dtype(bin_path)
    size = Path(bin_path).stat().st_size
    if size % dt.itemsize:
        raise TokenShardError(f"{bin_path}: {size} bytes is not a whole number of {dt.name} tokens")
    if size == 0:
        return np.zeros(0, dtype=dt)  # np.memmap refuses empty files
    return np.memmap(bin_path, dtype=dt, mode="r")


def count_tokens(bin_path: str | os.PathLike, dtype: np.dtype | str | type | None = None) -> int:
    dt = _shard_dtype(dtype) if dtype is not None else shard_dtype(bin_path)
    return Path(bin_path).stat().st_size // dt.itemsize


def iter_documents(
    bin_path: str | os.PathLike, dtype: np.dtype | str | type | None = None
) -> Iterator[np.ndarray]:
    """Each document of a shard as a view of its tokens (its trailing separator included)."""
    tokens = open_shard(bin_path, dtype)
    start = 0
    for end in read_document_ends(bin_path).tolist():
        yield tokens[start:end]
        start = end


class TokenShards:
    """The complete shards of one split: `TokenShards(dataset_dir, "train")` or `TokenShards(split_dir)`.

    Complete means the `.bin` has its `.idx` beside it. The dtype comes from the files and must agree across
    shards.
    """

    def __init__(self, directory: str | os.PathLike, split: str | None = None):
        folder = Path(directory)
        if split is not None:
            folder = folder / split
        elif not any(folder.glob(SHARD_GLOB)) and (folder / "train").is_dir():
            folder = folder / "train"
        if not folder.is_dir():
            raise TokenShardError(f"{folder}: no such token shard folder")
        self.directory = folder
        self.paths: list[Path] = sorted(p for p in folder.glob(SHARD_GLOB) if idx_path_for(p).is_file())
        dtypes = {shard_dtype(p) for p in self.paths if p.stat().st_size}
        if len(dtypes) > 1:
            raise TokenShardError(
                f"{folder}: shards of different dtypes ({', '.join(sorted(d.name for d in dtypes))})"
            )
        self.dtype: np.dtype = dtypes.pop() if dtypes else _DTYPES[2]

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[Path]:
        return iter(self.paths)

    @property
    def num_tokens(self) -> int:
        return sum(count_tokens(p, self.dtype) for p in self.paths)

    @property
    def num_documents(self) -> int:
        return sum(idx_path_for(p).stat().st_size // IDX_DTYPE.itemsize for p in self.paths)

    def open(self, i: int) -> np.ndarray:
        return open_shard(self.paths[i], self.dtype)


def _resolve_shards(
    shard_paths: Sequence[str | os.PathLike] | TokenShards, dtype: np.dtype | str | type | None
) -> tuple[list[Path], np.dtype]:
    if isinstance(shard_paths, TokenShards):
        paths, dt = list(shard_paths.paths), shard_paths.dtype
        return paths, _shard_dtype(dtype) if dtype is not None else dt
    paths = [Path(p) for p in shard_paths]
    if dtype is not None:
        return paths, _shard_dtype(dtype)
    dtypes = {shard_dtype(p) for p in paths if p.stat().st_size}
    if len(dtypes) > 1:
        raise TokenShardError("shards of different dtypes given together")
    return paths, dtypes.pop() if dtypes else _DTYPES[2]


def _shards_signature(paths: Sequence[Path], lengths: Sequence[int]) -> str:
    """Names and lengths of the shards a stream is drawn from, so a resume on other data is refused."""
    h = hashlib.sha256()
    for p, n in zip(paths, lengths, strict=True):
        h.update(f"{p.name}:{n}\n".encode())
    return h.hexdigest()[:16]


class RandomWindowSampler:
    """Batches of random fixed-length windows, nanoGPT-style: `x` = tokens[i : i+T], `y` = tokens[i+1 : i+T+1].

    A window lies inside one shard; its start is uniform over every valid start of every shard, so shards are
    drawn in proportion to their length. Batch n of rank r is drawn from its own generator seeded with
    (seed, rank, n): the stream is deterministic, different ranks draw different streams, and the state to
    resume is only the number of batches already drawn.

    `state_dict()` → `{"version": 1, "seed", "rank", "world_size", "block_size", "batch_size", "shards": <16 hex
    digits over shard names and lengths>, "batches": <batches drawn>}` (plain JSON). `load_state_dict` refuses a
    state drawn with other settings or from other shards.
    """

    def __init__(
        self,
        shard_paths: Sequence[str | os.PathLike] | TokenShards,
        block_size: int,
        batch_size: int,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        dtype: np.dtype | str | type | None = None,
    ):
        if block_size < 1 or batch_size < 1:
            raise ValueError(f"block_size and batch_size must be positive (got {block_size}, {batch_size})")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside world_size {world_size}")
        self.paths, self.dtype = _resolve_shards(shard_paths, dtype)
        if not self.paths:
            raise TokenShardError("no token shards to sample windows from")
        self.block_size = block_size
        self.batch_size = batch_size
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.batches = 0
        lengths = [count_tokens(p, self.dtype) for p in self.paths]
        self._signature = _shards_signature(self.paths, lengths)
        # valid starts per shard: a window needs block_size + 1 tokens (inputs plus the shifted targets)
        starts = np.array([max(n - block_size, 0) for n in lengths], dtype=np.int64)
        if starts.sum() == 0:
            raise TokenShardError(
                f"every shard is shorter than block_size + 1 = {block_size + 1} tokens "
                f"(longest has {max(lengths):,}); use a smaller block_size or more data"
            )
        self._cum_starts = np.cumsum(starts)
        self._total_starts = int(self._cum_starts[-1])
        self._maps: OrderedDict[int, np.ndarray] = OrderedDict()

    def _shard(self, i: int) -> np.ndarray:
        if i in self._maps:
            self._maps.move_to_end(i)
        else:
            self._maps[i] = open_shard(self.paths[i], self.dtype)
            if len(self._maps) > OPEN_SHARDS:
                self._maps.popitem(last=False)
        return self._maps[i]

    def next_batch(self) -> tuple[np.ndarray, np.ndarray]:
        """The next (x, y) pair, each int64 of shape (batch_size, block_size)."""
        rng = np.random.default_rng([self.seed, self.rank, self.batches])
        flat = rng.integers(0, self._total_starts, size=self.batch_size, dtype=np.int64)
        shard_of = np.searchsorted(self._cum_starts, flat, side="right")
        x = np.empty((self.batch_size, self.block_size), dtype=np.int64)
        y = np.empty((self.batch_size, self.block_size), dtype=np.int64)
        for row, (g, s) in enumerate(zip(flat.tolist(), shard_of.tolist(), strict=True)):
            offset = g - (int(self._cum_starts[s - 1]) if s else 0)
            window = self._shard(s)[offset : offset + self.block_size + 1]
            x[row] = window[:-1]
            y[row] = window[1:]
        self.batches += 1
        return x, y

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        while True:
            yield self.next_batch()

    def state_dict(self) -> dict:
        return {
            "version": SAMPLER_STATE_VERSION,
            "seed": self.seed,
            "rank": self.rank,
            "world_size": self.world_size,
            "block_size": self.block_size,
            "batch_size": self.batch_size,
            "shards": self._signature,
            "batches": self.batches,
        }

    def load_state_dict(self, state: dict) -> None:
        if state.get("version") != SAMPLER_STATE_VERSION:
            raise ValueError(f"sampler state version {state.get('version')!r} is not {SAMPLER_STATE_VERSION}")
        mine = self.state_dict()
        for key in ("seed", "rank", "world_size", "block_size", "batch_size"):
            if state.get(key) != mine[key]:
                raise ValueError(
                    f"cannot resume the window stream: saved {key}={state.get(key)!r}, this sampler has {mine[key]!r}"
                )
        if state.get("shards") != self._signature:
            raise ValueError("cannot resume the window stream: it was drawn from other token shards")
        batches = state.get("batches")
        if not isinstance(batches, int) or batches < 0:
            raise ValueError(f"sampler state has no valid 'batches' count: {batches!r}")
        self.batches = batches


def iter_sequential_windows(
    shard_paths: Sequence[str | os.PathLike] | TokenShards,
    block_size: int,
    batch_size: int,
    dtype: np.dtype | str | type | None = None,
    pad_id: int = 0,
    ignore_index: int = IGNORE_INDEX,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Non-overlapping windows over the shards read as one stream (in the given order), for evaluation.

    Window k has x = stream[kT : kT+T] and y = stream[kT+1 : kT+T+1]: every token but the first is a target
    exactly once, every token but the last an input exactly once. The last window is padded (x with `pad_id`,
    y with `ignore_index`, which the loss skips) and the last batch may have fewer rows. Arrays are int64.
    """
    if block_size < 1 or batch_size < 1:
        raise ValueError(f"block_size and batch_size must be positive (got {block_size}, {batch_size})")
    paths, dt = _resolve_shards(shard_paths, dtype)
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for x, y in _stream_windows(paths, dt, block_size, pad_id, ignore_index):
        xs.append(x)
        ys.append(y)
        if len(xs) == batch_size:
            yield np.stack(xs), np.stack(ys)
            xs, ys = [], []
    if xs:
        yield np.stack(xs), np.stack(ys)


def _stream_windows(
    paths: Sequence[Path], dtype: np.dtype, block: int, pad_id: int, ignore_index: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    # `carry` holds the stream from the next window's start on, when that window crosses into the next shard
    carry = np.zeros(0, dtype=np.int64)
    for path in paths:
        tokens = open_shard(path, dtype)
        pos = 0
        if carry.size:
            need = block + 1 - carry.size
            head = np.asarray(tokens[:need], dtype=np.int64)
            carry = np.concatenate([carry, head])
            if carry.size < block + 1:
                continue  # a shard shorter than the gap: keep filling the same window
            yield carry[:-1], carry[1:]
            pos = need - 1  # the next window starts at this window's last token
        while pos + block + 1 <= tokens.size:
            window = np.asarray(tokens[pos : pos + block + 1], dtype=np.int64)
            yield window[:-1], window[1:]
            pos += block
        carry = np.asarray(tokens[pos:], dtype=np.int64)
    if carry.size > 1:  # a lone last token has no target: it was the previous window's last target
        x = np.full(block, pad_id, dtype=np.int64)
        y = np.full(block, ignore_index, dtype=np.int64)
        x[: carry.size - 1] = carry[:-1]
        y[: carry.size - 1] = carry[1:]
        yield x, y
