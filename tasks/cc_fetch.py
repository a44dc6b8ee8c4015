"""Download Common Crawl files: a crawl's path list, then N of its WET/WARC files, over HTTPS.

Each file is streamed to `<name>.part`, resumed with an HTTP Range request after an interruption, retried with
exponential back-off on connection errors and 5xx answers, checked by decompressing the whole gzip stream, and
only then renamed to its final name. A file already present and valid is not downloaded again.
"""

from __future__ import annotations

import gzip
import logging
import os
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from storage.atomic import replace_file

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://data.commoncrawl.org/"
KINDS = ("wet", "warc", "wat")
CHUNK = 1 << 20


class FetchError(RuntimeError):
    """A download failed for good (after retries), or the server's answer makes no sense."""


@dataclass
class FetchResult:
    path: str
    url: str
    bytes: int
    resumed: bool = False
    attempts: int = 1
    skipped_existing: bool = False


@dataclass
class FetchReport:
    files: list[FetchResult] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)


def verify_gzip(path: str | os.PathLike) -> None:
    """Decompress the whole (possibly multi-member) gzip file; raise FetchError if it is damaged."""
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(CHUNK):
                pass
    except (OSError, EOFError, zlib.error) as e:
        raise FetchError(f"{path}: damaged gzip ({e})") from e


def _open(url: str, start: int, timeout: float):
    req = urllib.request.Request(url, headers={"User-Agent": "chatlike-fetch/0.1"})
    if start:
        req.add_header("Range", f"bytes={start}-")
    return urllib.request.urlopen(req, timeout=timeout)


def download(
    url: str,
    dest: str | os.PathLike,
    *,
    retries: int = 5,
    backoff: float = 1.0,
    timeout: float = 60.0,
    verify: bool | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> FetchResult:
    """Download `url` to `dest` atomically, resuming a `.part` file left by an earlier attempt."""
    dest = Path(dest)
    verify = dest.name.endswith(".gz") if verify is None else verify
    if dest.exists():
        if verify:
            verify_gzip(dest)
        return FetchResult(str(dest), url, dest.stat().st_size, skipped_existing=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    resumed = part.exists() and part.stat().st_size > 0
    last_error: Exception | None = None
    for attempt in range(1, retries + 2):
        start = part.stat().st_size if part.exists() else 0
        try:
            with _open(url, start, timeout) as resp:
                status = resp.status
                if start and status == 200:
                    start = 0  # the server ignored Range: start again from the beginning
                elif start and status != 206:
                    raise FetchError(f"{url}: unexpected HTTP {status} to a Range request")
                elif start and _range_start(resp.headers.get("Content-Range")) not in (None, start):
                    # bytes from somewhere else than asked for cannot be appended: start again
                    part.unlink(missing_ok=True)
                    raise FetchError(
                        f"{url}: asked for bytes from {start}, got Content-Range "
                        f"{resp.headers.get('Content-Range')!r}"
                    )
                expected = resp.headers.get("Content-Length")
                received = 0
                with open(part, "ab" if start else "wb") as out:
                    while chunk := resp.read(CHUNK):
                        out.write(chunk)
                        received += len(chunk)
                if expected is not None and received < int(expected):
                    # The connection dropped: keep what arrived, the next attempt asks for the rest.
                    raise ConnectionError(f"connection closed after {received} of {expected} bytes")
            if verify:
                try:
                    verify_gzip(part)
                except FetchError:
                    part.unlink(missing_ok=True)  # corrupt bytes cannot be resumed: start over
                    raise
            replace_file(part, dest)
            return FetchResult(str(dest), url, dest.stat().st_size, resumed=resumed, attempts=attempt)
        except urllib.error.HTTPError as e:
            if e.code == 416 and part.exists():  # nothing left to fetch: the part is complete
                if not verify:
                    replace_file(part, dest)
                    return FetchResult(str(dest), url, dest.stat().st_size, resumed=True, attempts=attempt)
                try:
                    verify_gzip(part)
                    replace_file(part, dest)
                    return FetchResult(str(dest), url, dest.stat().st_size, resumed=True, attempts=attempt)
                except FetchError as bad:
                    part.unlink(missing_ok=True)
                    last_error = bad
            elif e.code < 500 and e.code != 429:
                raise FetchError(f"{url}: HTTP {e.code} {e.reason}") from e
            else:
                last_error = e
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, FetchError) as e:
            last_error = e
        if attempt <= retries:
            delay = backoff * 2 ** (attempt - 1)
            log.warning("%s: attempt %d failed (%s); retrying in %.1f s", url, attempt, last_error, delay)
            sleep(delay)
    raise FetchError(f"{url}: failed after {retries + 1} attempts ({last_error})")


def _range_start(content_range: str | None) -> int | None:
    """The first byte of a `Content-Range: bytes START-END/TOTAL` header, or None."""
    if not content_range:
        return None
    unit, _, spec = content_range.strip().partition(" ")
    first = spec.split("-", 1)[0]
    return int(first) if unit == "bytes" and first.isdigit() else None


def crawl_paths(crawl: str, kind: str, base_url: str = DEFAULT_BASE_URL, **kw) -> list[str]:
    """The file paths listed in `crawl-data/<crawl>/<kind>.paths.gz`."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not '{kind}'")
    if not crawl.startswith("CC-MAIN-"):
        raise ValueError(f"'{crawl}' is not a crawl id (expected CC-MAIN-YYYY-WW)")
    url = f"{base_url.rstrip('/')}/crawl-data/{crawl}/{kind}.paths.gz"
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        listing = download(url, Path(d) / f"{kind}.paths.gz", **kw)
        with gzip.open(listing.path, "rt", encoding="utf-8") as fh:
            return [line.strip() for line in fh if line.strip()]


def fetch_crawl(
    crawl: str,
    kind: str,
    n_files: int,
    out_dir: str | os.PathLike,
    base_url: str = DEFAULT_BASE_URL,
    **kw,
) -> FetchReport:
    """Download the first `n_files` files of a crawl's path list into `out_dir` (flat, by file name)."""
    if n_files < 1:
        raise ValueError("--files must be at least 1")
    paths = crawl_paths(crawl, kind, base_url, **kw)
    report = FetchReport()
    for rel in paths[:n_files]:
        url = f"{base_url.rstrip('/')}/{rel.lstrip('/')}"
        report.files.append(download(url, Path(out_dir) / Path(rel).name, **kw))
    return report
