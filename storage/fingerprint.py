"""Fingerprints: the content address of a dataset, from its stage, parameters and inputs (DESIGN §3).

Same stage version, parameters and inputs give the same fingerprint, hence the same directory, so a stage whose
output already exists is skipped. Any change gives a new directory; old ones stay until `chatlike gc`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path, PurePath

FP_DIR_LEN = 16  # hex characters of the fingerprint used as the directory name


def _json_default(obj: object) -> object:
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    dump = getattr(obj, "model_dump", None)  # pydantic models, without importing pydantic here
    if callable(dump):
        return dump(mode="json")
    raise TypeError(f"cannot fingerprint a value of type {type(obj).__name__}: {obj!r}")


def canonical_json(obj: object) -> str:
    """JSON with sorted keys and no whitespace: equal values always give equal text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default)


def fingerprint(
    stage: str,
    stage_version: str,
    params: Mapping[str, object],
    input_fingerprints: Sequence[str] = (),
    raw_hashes: Sequence[str] = (),
) -> str:
    """sha256 (hex) over the stage identity, its canonical parameters and what it reads.

    Input order matters (a stage's inputs are positional); raw file hashes are given in the stage's own order.
    """
    payload = {
        "stage": stage,
        "stage_version": stage_version,
        "params": params,
        "inputs": list(input_fingerprints),
        "raw": list(raw_hashes),
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def hash_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """sha256 (hex) of a file's bytes, read in chunks (bounded memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            h.update(chunk)
    return h.hexdigest()


_HASHES: dict[tuple, str] = {}


def hash_file_once(path: str | os.PathLike) -> str:
    """`hash_file`, remembered in this process while the file keeps its size, mtime and inode: for large files
    (a base model's weights) that are planned many times in one run."""
    path = Path(path).resolve()
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _HASHES:
        _HASHES[key] = hash_file(path)
    return _HASHES[key]


def hash_files(paths: Iterable[str | os.PathLike]) -> list[str]:
    """Content hashes of raw input files, in the given order."""
    return [hash_file(Path(p)) for p in paths]
