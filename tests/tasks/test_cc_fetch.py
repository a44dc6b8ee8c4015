"""`chatlike commoncrawl fetch` against a local HTTP server on 127.0.0.1: path list, Range resume, retries,
gzip verification. (No internet here; the server stands in for data.commoncrawl.org.)"""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tasks.cc_fetch import FetchError, download, fetch_crawl, verify_gzip

CRAWL = "CC-MAIN-2024-22"
FILES = {
    f"crawl-data/{CRAWL}/segments/1/wet/part-{i}.warc.wet.gz": gzip.compress(
        (f"WARC/1.0\r\nWARC-Type: conversion\r\n\r\npage {i} " * 2000).encode()
    )
    for i in range(3)
}
FILES[f"crawl-data/{CRAWL}/wet.paths.gz"] = gzip.compress("\n".join(k for k in FILES if "/wet/" in k).encode() + b"\n")


class Server:
    def __init__(self):
        self.requests: list[tuple[str, str | None]] = []
        # path → actions: "503", "cut", "corrupt", "ignore_range" (200 and the whole body to a Range request),
        # "wrong_range" (206 with bytes from 0 whatever was asked)
        self.fail_next: dict[str, list[str]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path = self.path.lstrip("/")
                rng = self.headers.get("Range")
                server.requests.append((path, rng))
                body = FILES.get(path)
                if body is None:
                    self.send_error(404)
                    return
                actions = server.fail_next.get(path, [])
                action = actions.pop(0) if actions else None
                if action == "503":
                    self.send_error(503)
                    return
                if action == "corrupt":
                    body = body[:100] + b"\x00" * 50 + body[150:]
                start = int(rng.split("=")[1].rstrip("-")) if rng else 0
                if action in ("ignore_range", "wrong_range"):  # the whole body, as if no Range had been asked
                    start = 0
                if start >= len(body):
                    self.send_response(416)
                    self.end_headers()
                    return
                partial = rng is not None and action != "ignore_range"
                self.send_response(206 if partial else 200)
                if partial:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                if action == "cut":
                    self.wfile.write(body[start : start + (len(body) - start) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                self.wfile.write(body[start:])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture()
def server():
    s = Server()
    yield s
    s.httpd.shutdown()


NO_WAIT = {"backoff": 0.0, "sleep": lambda s: None, "timeout": 5}


def test_fetches_path_list_and_n_files(server, tmp_path):
    report = fetch_crawl(CRAWL, "wet", 2, tmp_path, base_url=server.url, **NO_WAIT)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["part-0.warc.wet.gz", "part-1.warc.wet.gz"]
    for f in report.files:
        verify_gzip(f.path)
    assert (tmp_path / "part-1.warc.wet.gz").read_bytes() == FILES[f"crawl-data/{CRAWL}/segments/1/wet/part-1.warc.wet.gz"]
    # A second run finds the files and downloads nothing.
    n_before = len(server.requests)
    again = fetch_crawl(CRAWL, "wet", 2, tmp_path, base_url=server.url, **NO_WAIT)
    assert all(f.skipped_existing for f in again.files)
    assert len(server.requests) == n_before + 1  # only the path list


def test_resumes_a_partial_download_with_range(server, tmp_path):
    rel = f"crawl-data/{CRAWL}/segments/1/wet/part-0.warc.wet.gz"
    body = FILES[rel]
    half = len(body) // 2
    (tmp_path / "part-0.warc.wet.gz.part").write_bytes(body[:half])
    result = download(server.url + rel, tmp_path / "part-0.warc.wet.gz", **NO_WAIT)
    assert result.resumed
    assert server.requests[-1] == (rel, f"bytes={half}-")
    assert (tmp_path / "part-0.warc.wet.gz").read_bytes() == body
    assert not (tmp_path / "part-0.warc.wet.gz.part").exists()


def test_retries_server_errors_and_cut_connections(server, tmp_path):
    rel = f"crawl-data/{CRAWL}/segments/1/wet/part-2.warc.wet.gz"
    server.fail_next[rel] = ["503", "cut"]
    result = download(server.url + rel, tmp_path / "p.warc.wet.gz", **NO_WAIT)
    assert result.attempts == 3
    assert (tmp_path / "p.warc.wet.gz").read_bytes() == FILES[rel]
    ranges = [r for p, r in server.requests if p == rel]
    assert ranges[0] is None and ranges[-1] is not None  # the last attempt resumed what the cut one had written


def test_corrupt_bytes_are_detected_and_downloaded_again(server, tmp_path):
    rel = f"crawl-data/{CRAWL}/segments/1/wet/part-1.warc.wet.gz"
    server.fail_next[rel] = ["corrupt"]
    result = download(server.url + rel, tmp_path / "p.gz", **NO_WAIT)
    assert result.attempts == 2
    assert (tmp_path / "p.gz").read_bytes() == FILES[rel]


def test_gives_up_with_a_clear_error(server, tmp_path):
    rel = f"crawl-data/{CRAWL}/segments/1/wet/part-0.warc.wet.gz"
    server.fail_next[rel] = ["503"] * 10
    with pytest.raises(FetchError, match=r"failed after 3 attempts"):
        download(server.url + rel, tmp_path / "x.gz", retries=2, **NO_WAIT)
    assert not (tmp_path / "x.gz").exists()
    with pytest.raises(FetchError, match="HTTP 404"):
        download(server.url + "nope.gz", tmp_path / "y.gz", **NO_WAIT)


def test_cli_fetch(server, tmp_path):
    r = CliRunner().invoke(app, ["commoncrawl", "fetch", "--crawl", CRAWL, "--kind", "wet", "--files", "1",
                                 "--out", str(tmp_path), "--base-url", server.url])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "part-0.warc.wet.gz").exists()
    r = CliRunner().invoke(app, ["commoncrawl", "fetch", "--crawl", "2024-22", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "not a crawl id" in r.output


@pytest.mark.parametrize("action", ["ignore_range", "wrong_range"])
def test_a_server_that_answers_a_range_request_with_other_bytes_is_not_trusted(server, tmp_path, action):
    rel = f"crawl-data/{CRAWL}/segments/1/wet/part-2.warc.wet.gz"
    body = FILES[rel]
    (tmp_path / "p.warc.wet.gz.part").write_bytes(body[:1000])
    server.fail_next[rel] = [action]
    result = download(server.url + rel, tmp_path / "p.warc.wet.gz", **NO_WAIT)
    assert (tmp_path / "p.warc.wet.gz").read_bytes() == body
    assert result.attempts == (1 if action == "ignore_range" else 2)
