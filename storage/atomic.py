"""Atomic file writes: a file is written whole under a temporary sibling name, then renamed into place, so a
reader (or a rerun after a kill) sees either the old file, the new one, or none — never half of one.

Every writer of the project goes through here instead of its own `os.replace` dance. Temporaries are named
`<name>.partial` (or `<stem>.partial<suffix>` where a library picks the format from the suffix) in the same
folder, so the rename stays on one filesystem. A full disk (or quota) while writing removes the temporary and
becomes one `DiskFullError` naming the file, so a failed run does not keep filling the disk.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PARTIAL = ".partial"
_DISK_FULL = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded"}


class DiskFullError(OSError):
    """A file could not be written for want of space (ENOSPC, EDQUOT); its partial file has been removed."""


def raise_if_disk_full(path: str | os.PathLike, exc: BaseException) -> None:
    """Raise DiskFullError naming `path` (the file being written) when `exc` is a full disk or quota."""
    if not isinstance(exc, OSError) or isinstance(exc, DiskFullError) or exc.errno not in _DISK_FULL:
        return
    try:
        free = f"{shutil.disk_usage(Path(path).parent).free / 1e6:,.0f} MB free there now"
    except OSError:
        free = "free space unknown"
    raise DiskFullError(f"{path}: cannot write it: {_DISK_FULL[exc.errno]} ({free}); free some space and rerun: "
                        f"the run resumes where it stopped") from exc


def partial_path(path: str | os.PathLike, keep_suffix: bool = False, unique: bool = False) -> Path:
    """The temporary sibling of `path`: `name.partial`, or `stem.partial.ext` with `keep_suffix` (for writers
    such as matplotlib that choose the format from the file's extension). With `unique` the name carries the
    process and thread, for files that several writers may replace at once (the last rename wins, whole)."""
    final = Path(path)
    tag = f".{os.getpid()}-{threading.get_ident()}" if unique else ""
    if keep_suffix and final.suffix:
        return final.with_name(f"{final.stem}{tag}{PARTIAL}{final.suffix}")
    return final.with_name(f"{final.name}{tag}{PARTIAL}")


def fsync_file(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(folder: str | os.PathLike) -> None:
    """Flush a folder's direct entries and the folder itself to disk (before renaming it into place)."""
    folder = Path(folder)
    for p in [*folder.iterdir(), folder]:
        fsync_file(p)


@contextmanager
def atomic_path(path: str | os.PathLike, *, keep_suffix: bool = False, durable: bool = False,
                unique: bool = False) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces `path`, on error it is removed.

    `durable` flushes the file to disk before the rename (checkpoints, which must survive a power cut).
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial_path(final, keep_suffix, unique)
    tmp.unlink(missing_ok=True)
    try:
        yield tmp
        if durable:
            fsync_file(tmp)
        os.replace(tmp, final)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        raise_if_disk_full(final, exc)
        raise


def write_atomic(path: str | os.PathLike, write: Callable[[Path], Any], *, keep_suffix: bool = False,
                 durable: bool = False, unique: bool = False) -> Path:
    """Call `write(tmp)` to fill a temporary sibling, then rename it to `path`; returns `path`."""
    with atomic_path(path, keep_suffix=keep_suffix, durable=durable, unique=unique) as tmp:
        write(tmp)
    return Path(path)


def write_text_atomic(path: str | os.PathLike, text: str, *, durable: bool = False, unique: bool = False) -> Path:
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), durable=durable, unique=unique)


def write_json_atomic(path: str | os.PathLike, obj: Any, *, indent: int | None = None, sort_keys: bool = False,
                      durable: bool = False) -> Path:
    """`obj` as JSON and a final newline."""
    text = json.dumps(obj, indent=indent, sort_keys=sort_keys) + "\n"
    return write_text_atomic(path, text, durable=durable)


def replace_file(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Move a fully written file into place atomically (for writers that manage their own temporaries)."""
    os.replace(src, dst)
    return Path(dst)
