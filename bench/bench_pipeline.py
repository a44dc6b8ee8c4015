"""The whole data DAG through `chatlike run`, beside datatrove's nearest pipeline on the same input (issue 20).

    .venv/bin/python bench/bench_pipeline.py [--quick] [--corpus warc|jsonl|both] [--skip-datatrove]
    .venv/bin/python bench/bench_pipeline.py --scaling [--scaling-mb 24] [--corpus jsonl]
    .venv/bin/python bench/bench_pipeline.py --parallel [--mb 24] [--corpus jsonl]   # 1 vs 2 processes, Dask

Two corpora, built once by the set-up into a cache folder outside the repository ($CHATLIKE_BENCH_CACHE, default
~/.cache/chatlike-bench/pipeline) and reused:

- **WARC**: the HTML of Debian's documentation packages (Python, Rust, Java, PostgreSQL, Django, Boost, the
  Debian Reference; `bench/setup_pipeline_corpus.sh` installs them with apt), each page a WARC `response`
  record, gzipped per record as Common Crawl does, in files of about 1/8 of the corpus. Sizes count the HTML
  payload (≥ 300 MB in full mode, 24 MB quick); the gzipped files are about a fifth of it.
- **JSONL**: documents of 3–20 paragraphs drawn without replacement from a shuffled pool of prose paragraphs (≥ 8
  words, ending like a sentence, no code) — the text of those pages (Resiliparse) and the English texts of
  ../shared/data (read in place) — reshuffled when the pool is used up, so at 500 MB (full) each paragraph appears about twice; 24 MB quick.

chatlike: a config in a temporary folder (ingest → clean → langid → quality → kenlm-train on a 5 MB slice of the
pool → perplexity → dedup exact, MinHash, suffix array → sample → tokenizer (8,192) → encode), `chatlike run
--config C --stop-after encode` as a subprocess with `runner.kind: process` and 2 workers.

datatrove (the same worker count: tasks=2, workers=2 with LocalPipelineExecutor; MinHash buckets 14 tasks):
WarcReader + Trafilatura (or JsonlReader) → LanguageFilter (lid.176.ftz, the same model file as ours, no
download) → GopherRepetitionFilter → GopherQualityFilter → C4QualityFilter → JsonlWriter; MinHash signatures,
buckets, cluster, filter → DocumentTokenizer with the tokenizer.json our run trained. datatrove has no
cleaning, KenLM, exact-document, suffix-array, sample or tokenizer-training step: it does less work.

Both sides: wall time of the whole command (Python start-up included), peak RSS summed over the process tree
(polled every 0.2 s; shared pages are counted once per process), per-stage seconds and documents kept. Times
are wall-clock on a shared machine: other processes running at the same time slow both sides.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import summary  # noqa: E402  (headline figures for bench/run_all.py)

SHARED = ROOT.parent / "shared" / "data"
CACHE = Path(os.environ.get("CHATLIKE_BENCH_CACHE", Path.home() / ".cache" / "chatlike-bench")) / "pipeline"
DOC_PACKAGES = ("python3.11-doc", "debian-reference-en", "postgresql-doc-15", "rust-doc", "python-django-doc",
                "libboost1.74-doc", "openjdk-17-doc")
SHARED_TEXTS = (SHARED / "text" / "char-rnn_tinyshakespeare_input.txt", SHARED / "text" / "sentencepiece_botchan.txt",
                SHARED / "text" / "MinHash_articles_1000.train", SHARED / "langid" / "lingua_sentences_en.txt")
WORKERS = 2
QUICK_MB = 24
FULL_MB = {"warc": 320, "jsonl": 520}
REFERENCE_MB = 5
AIM_SPEEDUP = 3.0
AIM_GB_PER_CORE_HOUR = 4.0
AIM_SCALING = 4.4  # 4× the input in at most this many times the time
AIM_PROCESS_SPEEDUP = 1.7  # each part-wise stage, 2 processes against 1
AIM_DASK_SPEEDUP = 1.6  # each part-wise stage, a local Dask cluster of 2 single-thread workers against 1 process


# ----------------------------------------------------------------------------------------------- corpora


def doc_html_files() -> list[Path]:
    """Every HTML page the documentation packages installed, once each (symlinks and duplicates left out)."""
    setup = HERE / "setup_pipeline_corpus.sh"
    if subprocess.run(["bash", str(setup)]).returncode != 0:
        raise SystemExit(f"{setup} failed: the WARC corpus needs Debian's documentation packages")
    seen, files = set(), []
    for pkg in DOC_PACKAGES:
        r = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            p = Path(line)
            if p.suffix in (".html", ".htm") and p.is_file() and not p.is_symlink():
                real = p.resolve()
                if real not in seen and p.stat().st_size > 0:
                    seen.add(real)
                    files.append(p)
    if not files:
        raise SystemExit("no HTML found in " + ", ".join(DOC_PACKAGES))
    files.sort()
    random.Random(0).shuffle(files)
    return files


def build_warc(folder: Path, target_mb: float, n_files: int = 8) -> dict:
    """WARC files of HTML `response` records (gzipped per record) until `target_mb` of HTML; cached."""
    done = folder / "corpus.json"
    if done.is_file():
        return json.loads(done.read_text())
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    target = target_mb * 1e6
    per_file = target / n_files
    pages = html_bytes = 0
    k, fh, writer, in_file = -1, None, None, per_file
    for path in doc_html_files():
        if html_bytes >= target:
            break
        if in_file >= per_file:
            if fh:
                fh.close()
            k += 1
            fh = open(folder / f"docs-{k:05d}.warc.gz", "wb")
            writer, in_file = WARCWriter(fh, gzip=True), 0
        body = path.read_bytes()
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
                                   protocol="HTTP/1.1")
        record = writer.create_warc_record(f"http://localhost{path}", "response", payload=io.BytesIO(body),
                                           http_headers=headers,
                                           warc_headers_dict={"WARC-Identified-Payload-Type": "text/html"})
        writer.write_record(record)
        pages += 1
        html_bytes += len(body)
        in_file += len(body)
    if fh:
        fh.close()
    info = {"kind": "warc", "glob": str(folder / "*.warc.gz"), "docs": pages, "bytes": html_bytes,
            "disk_bytes": sum(p.stat().st_size for p in folder.glob("*.warc.gz")), "files": k + 1,
            "shortfall": html_bytes < target}
    done.write_text(json.dumps(info))
    return info


def paragraph_pool() -> Path:
    """One paragraph a line: the text of every documentation page (Resiliparse) and the shared English texts."""
    pool = CACHE / "pool.txt"
    if pool.is_file():
        return pool
    from resiliparse.extract.html2text import extract_plain_text

    tmp = pool.with_suffix(".tmp")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w", encoding="utf-8") as out:
        for path in doc_html_files():
            html = path.read_bytes().decode("utf-8", errors="replace")
            text = extract_plain_text(html, main_content=True)
            for para in re.split(r"\n\s*\n|\n", text):
                para = " ".join(para.split())
                if len(para) >= 40:
                    out.write(para + "\n")
        for path in SHARED_TEXTS:
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix == ".train":  # `tNNN text` per line
                text = "\n".join(line.split(" ", 1)[-1] for line in text.splitlines())
            for para in re.split(r"\n\s*\n", text):
                para = " ".join(para.split())
                if len(para) >= 40:
                    out.write(para + "\n")
    tmp.rename(pool)
    return pool


def reference_text() -> Path:
    """A fixed 5 MB slice of the pool for kenlm-train's English model (the same for every corpus size)."""
    ref = CACHE / "reference-en.txt"
    if not ref.is_file():
        lines = paragraph_pool().read_text(encoding="utf-8").splitlines()
        random.Random(1).shuffle(lines)
        size, keep = 0, []
        for line in lines:
            keep.append(line)
            size += len(line) + 1
            if size >= REFERENCE_MB * 1e6:
                break
        ref.write_text("\n".join(keep) + "\n", encoding="utf-8")
    return ref


def _is_prose(paragraph: str) -> bool:
    """Sentences rather than code or API signatures, most of the documentation pages' text (rustdoc, javadoc)."""
    words = paragraph.split()
    return (len(words) >= 8 and paragraph[-1] in ".!?\"'" and "{" not in paragraph
            and sum(any(c.isalpha() for c in w) for w in words) >= 0.85 * len(words))


def build_jsonl(folder: Path, target_mb: float, n_files: int = 8) -> dict:
    """JSONL files of documents made of pool paragraphs drawn without replacement (reshuffled when used up)."""
    done = folder / "corpus.json"
    if done.is_file():
        return json.loads(done.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    paras = [p for p in paragraph_pool().read_text(encoding="utf-8").splitlines() if _is_prose(p)]
    rng = random.Random(0)
    order: list[int] = []
    target = target_mb * 1e6
    per_file = target / n_files
    docs = size = 0
    epochs = 0
    handles = [open(folder / f"docs-{k:05d}.jsonl", "w", encoding="utf-8") for k in range(n_files)]
    try:
        while size < target:
            picked = []
            for _ in range(rng.randint(3, 20)):
                if not order:
                    order = list(range(len(paras)))
                    rng.shuffle(order)
                    epochs += 1
                picked.append(paras[order.pop()])
            line = json.dumps({"id": f"doc-{docs:08d}", "text": "\n\n".join(picked)}, ensure_ascii=False) + "\n"
            handles[min(int(size // per_file), n_files - 1)].write(line)
            docs += 1
            size += len(line.encode("utf-8"))
    finally:
        for h in handles:
            h.close()
    info = {"kind": "jsonl", "glob": str(folder / "*.jsonl"), "docs": docs, "bytes": size, "disk_bytes": size,
            "files": n_files, "pool_paragraphs": len(paras), "draws_per_paragraph": round(
                (epochs - 1) + (len(paras) - len(order)) / len(paras), 2)}
    done.write_text(json.dumps(info))
    return info


def corpus(kind: str, mb: float) -> dict:
    folder = CACHE / f"{kind}-{mb:g}mb"
    return build_warc(folder, mb) if kind == "warc" else build_jsonl(folder, mb)


# ----------------------------------------------------------------------------------------------- measuring


@dataclass
class TreeRun:
    """A command's wall time, its tree's peak summed RSS, and the peak within each marked phase."""

    seconds: float = 0.0
    returncode: int = 0
    peak_mb: float = 0.0
    phase_peak_mb: dict[str, float] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    tail: str = ""


def run_tree(cmd: list[str], cwd: Path, env: dict, phase_of_line=None, interval: float = 0.2) -> TreeRun:
    """Runs cmd, polling the RSS of it and all its descendants; `phase_of_line` names the phase a log line starts."""
    import psutil

    out = TreeRun()
    phase = ["start"]
    starts = {"start": time.monotonic()}
    lines: list[str] = []
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            name = phase_of_line(line) if phase_of_line else None
            if name and name != phase[0]:
                now = time.monotonic()
                out.phase_seconds[phase[0]] = out.phase_seconds.get(phase[0], 0.0) + now - starts[phase[0]]
                phase[0] = name
                starts[name] = now

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        total = 0
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        mb = total / 2**20
        out.peak_mb = max(out.peak_mb, mb)
        out.phase_peak_mb[phase[0]] = max(out.phase_peak_mb.get(phase[0], 0.0), mb)
        time.sleep(interval)
    proc.wait()
    reader.join(timeout=5)
    out.seconds = time.monotonic() - t0
    out.phase_seconds[phase[0]] = out.phase_seconds.get(phase[0], 0.0) + time.monotonic() - starts[phase[0]]
    out.returncode = proc.returncode
    out.tail = "".join(lines[-30:])
    return out


# ----------------------------------------------------------------------------------------------- chatlike


DATA_STAGES = ("ingest", "clean", "langid-tags", "langid", "quality-tags", "quality", "kenlm-train",
               "perplexity-tags", "perplexity", "dedup-exact", "dedup-minhash", "dedup-suffix-array", "sample",
               "tokenizer", "encode")


def chatlike_config(info: dict, work: Path, runner: dict | None = None) -> Path:
    import yaml

    cfg = {
        "name": "bench",
        "data_root": str(work / "data"),
        "runner": runner or {"kind": "process", "workers": WORKERS},
        "ingest": {"inputs": [{"path": info["glob"], "kind": info["kind"]}]},
        "clean": {"min_chars": 20},
        "kenlm_train": {"references": {"en": [str(reference_text())]}},
        "perplexity": {"tag": {"default_lang": "en"}, "filter": {"default_lang": "en", "keep_buckets": ["head", "middle"]}},
        "dedup": {"methods": ["exact", "minhash", "suffix_array"]},
        "sample": {"fraction": 0.02, "min_bytes": 2_000_000},  # the WARC corpus keeps few pages: never empty
        "tokenizer": {"vocab_size": 8192},
        "encode": {"val_fraction": 0.005},
    }
    path = work / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


_FLOW_LINE = re.compile(r"Beginning subflow run '([^']+)' for flow '([a-z-]+)'")
_FLOW_END = re.compile(r"Flow run '([^']+)' - Finished in state")


def chatlike_phases(last: str = "encode"):
    """`phase_of_line` for a `chatlike run` log: a stage's flow starts its phase; kenlm-train, a subflow of
    perplexity's, is a phase of its own, and perplexity's phase goes on when it finishes. The `last` stage's phase
    ends with its flow run: what follows (the pipeline's funnel and lineage artifacts, the command's exit) is the
    phase "finish", not that stage's."""
    inner: set[str] = set()
    final: set[str] = set()

    def phase(line: str) -> str | None:
        if (m := _FLOW_LINE.search(line)) and m.group(2) != "pipeline":
            if m.group(2) == "kenlm-train":
                inner.add(m.group(1))
            elif m.group(2) == last:
                final.add(m.group(1))
            return m.group(2)
        if m := _FLOW_END.search(line):
            if m.group(1) in inner:
                return "perplexity"
            if m.group(1) in final:
                return "finish"
        return None

    return phase


def prefect_home() -> Path:
    """One Prefect home for every `chatlike run` of the bench, its database created beforehand: a new home's first
    server start creates the database (Prefect's migrations, ~10 s here), which a pipeline that runs again and
    again (the nightly refresh) pays once, not per run. The bench measures that steady state."""
    home = CACHE / "prefect-home"
    if not (home / "prefect.db").is_file():
        from flows.temporary_server import TemporaryServer

        home.mkdir(parents=True, exist_ok=True)
        server = TemporaryServer()
        with mock.patch.dict(os.environ, {"PREFECT_HOME": str(home)}):
            try:
                server.start()
                server.wait(300)
            finally:
                server.stop()
    return home


def run_chatlike(info: dict, work: Path, runner: dict | None = None, env_extra: dict | None = None) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    config = chatlike_config(info, work, runner)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PREFECT_HOME": str(prefect_home()), **(env_extra or {})}
    cmd = [str(Path(sys.executable).with_name("chatlike")), "run", "--config", str(config), "--stop-after", "encode"]
    tree = run_tree(cmd, ROOT, env, chatlike_phases())
    if tree.returncode != 0:
        raise SystemExit(f"chatlike run failed ({tree.returncode}):\n{tree.tail}")
    from storage.dataset import is_dataset, read_manifest
    from storage.runs import read_run_pointer

    pointer = read_run_pointer(work / "data", "bench")["stages"]
    stages = []
    for name in DATA_STAGES:
        entry = pointer.get(name)
        if entry is None or not is_dataset(entry["path"]):
            continue
        m = read_manifest(entry["path"])
        flow = name.removesuffix("-tags")
        stages.append({"stage": name, "work_s": m.seconds, "in": m.counts.get("in"), "out": m.counts.get("out"),
                       "flow_s": tree.phase_seconds.get(flow), "peak_mb": tree.phase_peak_mb.get(flow)})
        if name == "tokenizer":
            info["tokenizer_json"] = str(Path(entry["path"]) / "tokenizer.json")
        if name == "encode":
            stages[-1]["out"] = m.counts.get("tokens_train", 0) + m.counts.get("tokens_val", 0)
    return {"seconds": tree.seconds, "peak_mb": tree.peak_mb, "stages": stages,
            "kept": next((s["out"] for s in reversed(stages) if s["stage"].startswith("dedup")), None),
            "phase_seconds": tree.phase_seconds, "phase_peak_mb": tree.phase_peak_mb}


# ----------------------------------------------------------------------------------------------- datatrove


def datatrove_worker(info: dict, work: Path) -> None:
    """Runs datatrove's nearest pipeline (in a subprocess of its own: the bench times the whole process)."""
    import logging

    import datatrove.utils.hashes.xxhash as dt_xxhash
    import xxhash

    # datatrove 0.10 passes str to xxhash, which xxhash >= 4 rejects: encode first, same hash otherwise (bench_dedup)
    dt_xxhash.xxhash64 = lambda s: xxhash.xxh64_intdigest(s.encode("utf-8") if isinstance(s, str) else s)
    dt_xxhash.xxhash32 = lambda s: xxhash.xxh32_intdigest(s.encode("utf-8") if isinstance(s, str) else s)
    from loguru import logger

    logger.remove()
    logging.disable(logging.INFO)
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.pipeline.writers.jsonl import JsonlWriter
    from datatrove.utils.lid import FT176LID

    class LocalFT176LID(FT176LID):
        """The same lid.176.ftz file our langid stage reads, instead of datatrove's download (no network)."""

        @property
        def model(self):
            if self._model is None:
                from fasttext.FastText import _FastText

                from tasks.langid import default_model_path

                self._model = _FastText(str(default_model_path()))
            return self._model

    language_filter = LanguageFilter(language_threshold=0.65)
    language_filter.model = LocalFT176LID(None)

    src = Path(info["glob"]).parent
    glob = Path(info["glob"]).name
    reader = (WarcReader(str(src), glob_pattern=glob) if info["kind"] == "warc"
              else JsonlReader(str(src), glob_pattern=glob))
    first = [reader] + ([Trafilatura(favour_precision=True)] if info["kind"] == "warc" else []) + [
        language_filter,
        GopherRepetitionFilter(),
        GopherQualityFilter(),
        C4QualityFilter(),
        JsonlWriter(str(work / "filtered")),
    ]
    cfg = MinhashConfig()  # 5-grams, 14 buckets × 8 hashes: datatrove's defaults, ours too
    steps = [
        ("read+extract+filters", first, WORKERS),
        ("minhash signatures", [JsonlReader(str(work / "filtered")),
                                MinhashDedupSignature(output_folder=str(work / "sigs"), config=cfg)], WORKERS),
        ("minhash buckets", [MinhashDedupBuckets(input_folder=str(work / "sigs"), output_folder=str(work / "buckets"),
                                                 config=cfg)], cfg.num_buckets),
        ("minhash cluster", [MinhashDedupCluster(input_folder=str(work / "buckets"),
                                                 output_folder=str(work / "remove"), config=cfg)], 1),
        ("minhash filter+tokenize", [JsonlReader(str(work / "filtered")),
                                     MinhashDedupFilter(input_folder=str(work / "remove")),
                                     DocumentTokenizer(output_folder=str(work / "tokens"),
                                                       tokenizer_name_or_path=info["tokenizer_json"],
                                                       eos_token="<|endoftext|>")], WORKERS),
    ]
    report = []
    for k, (name, pipeline, tasks) in enumerate(steps):
        print(f"datatrove step: {name}", flush=True)
        t0 = time.monotonic()
        logs = work / f"logs{k}"
        LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=min(WORKERS, tasks),
                              logging_dir=str(logs)).run()
        report.append({"step": name, "seconds": time.monotonic() - t0, "blocks": _block_stats(logs)})
    print("RESULT " + json.dumps(report), flush=True)


def _block_stats(logs: Path) -> list[dict]:
    """Per block of one executor run: name, documents in (total) and forwarded, seconds (summed over tasks)."""
    path = logs / "stats.json"
    if not path.is_file():
        return []
    rows = []
    for block in json.loads(path.read_text()):
        stats = block.get("stats") or {}
        total = stats.get("total", stats.get("documents"))
        forwarded = stats.get("forwarded", stats.get("documents"))
        total = total.get("total", total) if isinstance(total, dict) else total
        forwarded = forwarded.get("total", forwarded) if isinstance(forwarded, dict) else forwarded
        rows.append({"name": block.get("name", "?"), "in": total, "out": forwarded,
                     "seconds": (block.get("time_stats") or {}).get("total")})
    return rows


def run_datatrove(info: dict, work: Path) -> dict | str:
    try:
        import datatrove  # noqa: F401
    except ImportError:
        return "datatrove not installed: make bench (pip install -e '.[bench]')"
    if not info.get("tokenizer_json"):
        return "no tokenizer.json from our run to give DocumentTokenizer"
    work.mkdir(parents=True, exist_ok=True)
    (work / "corpus.json").write_text(json.dumps(info))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "HF_ASSETS_CACHE": str(CACHE / "hf-assets")}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--datatrove-worker", str(work)]
    tree = run_tree(cmd, ROOT, env, lambda line: line.split(": ", 1)[1].strip()
                    if line.startswith("datatrove step: ") else None)
    result = next((ln for ln in tree.tail.splitlines() if ln.startswith("RESULT ")), None)
    if tree.returncode != 0 or result is None:
        return "failed: " + (tree.tail.strip().splitlines() or ["?"])[-1]
    steps = json.loads(result.removeprefix("RESULT "))
    for s in steps:
        s["peak_mb"] = tree.phase_peak_mb.get(s["step"])
    first = steps[0]["blocks"]
    last = steps[-1]["blocks"]
    kept = next((b["out"] for b in last if "dedup" in b["name"].lower() or "minhash" in b["name"].lower()), None)
    return {"seconds": tree.seconds, "peak_mb": tree.peak_mb, "steps": steps, "blocks": first, "kept": kept}


# ----------------------------------------------------------------------------------------------- tables


def rates(info: dict, seconds: float) -> tuple[float, float, float]:
    """docs/s per core, MB/s per core, GB per core-hour (of the input as sized in the corpus description)."""
    core_s = seconds * WORKERS
    return info["docs"] / core_s, info["bytes"] / 1e6 / core_s, info["bytes"] / 1e9 / (core_s / 3600)


def describe(info: dict) -> str:
    if info["kind"] == "warc":
        return (f"WARC: {info['docs']:,} HTML pages of Debian documentation, {info['bytes'] / 1e6:,.0f} MB of HTML "
                f"({info['disk_bytes'] / 1e6:,.0f} MB gzipped) in {info['files']} files")
    return (f"JSONL: {info['docs']:,} documents, {info['bytes'] / 1e6:,.0f} MB in {info['files']} files "
            f"(prose paragraphs of a {info['pool_paragraphs']:,}-paragraph pool, {info['draws_per_paragraph']} uses each)")


def _num(v: float | None, digits: int) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _fmt(v: object) -> str:
    return f"{v:,}" if isinstance(v, int) else ""


def print_comparison(info: dict, ours: dict, theirs: dict | str) -> None:
    print(f"\n{describe(info)}; {WORKERS} workers each side")
    head = (f"{'pipeline':<34} {'wall s':>8} {'docs/s/core':>12} {'MB/s/core':>10} {'GB/core-h':>10} "
            f"{'peak RSS MB':>12} {'docs kept':>10}")
    print(head + "\n" + "-" * len(head))
    rows = [("chatlike run (ingest → encode)", ours)]
    rows.append(("datatrove (nearest pipeline)", theirs))
    for name, r in rows:
        if isinstance(r, str):
            print(f"{name:<34} ({r})")
            continue
        d, mb, gb = rates(info, r["seconds"])
        kept = f"{r['kept']:,}" if isinstance(r.get("kept"), int) else "—"
        print(f"{name:<34} {r['seconds']:>8.1f} {d:>12,.1f} {mb:>10.3f} {gb:>10.2f} {r['peak_mb']:>12,.0f} {kept:>10}")
    d_ours, _, gb_ours = rates(info, ours["seconds"])
    if isinstance(theirs, dict):
        ratio = theirs["seconds"] / ours["seconds"]
        print(f"aim: ≥ {AIM_SPEEDUP:g}× datatrove in docs/s per core: {ratio:.2f}× — "
              f"{'met' if ratio >= AIM_SPEEDUP else 'unmet'}")
    print(f"aim: ≥ {AIM_GB_PER_CORE_HOUR:g} GB per core-hour: {gb_ours:.2f} — "
          f"{'met' if gb_ours >= AIM_GB_PER_CORE_HOUR else 'unmet'}")

    print("\nchatlike, per stage (work = the stage's own seconds from its manifest; flow = wall seconds from the "
          "stage's flow start to the next one's, tag + filter together (kenlm-train, a subflow, apart); rest = "
          "flow − work: Prefect flow and task runs, planning, publishing, reports; peak RSS of the whole tree "
          "within that flow)")
    head = (f"{'stage':<20} {'work s':>7} {'flow s':>7} {'rest s':>7} {'docs in':>10} {'docs out':>10} "
            f"{'peak RSS MB':>12}")
    print(head + "\n" + "-" * len(head))
    start = ours["phase_seconds"].get("start", 0.0)
    print(f"{'start-up':<20} {0.0:>7.1f} {start:>7.1f} {start:>7.1f} {'':>10} {'':>10} "
          f"{ours['phase_peak_mb'].get('start', 0.0):>12,.0f}")
    flows: dict[str, list] = {}
    for s in ours["stages"]:  # a flow's work: its tag and filter datasets
        flow = s["stage"].removesuffix("-tags")
        flows.setdefault(flow, []).append(s)
    for s in ours["stages"]:
        own = [x for x in flows.values() if x[-1] is s]
        shown = bool(own) and s["flow_s"] is not None
        flow = f"{s['flow_s']:.1f}" if shown else ""
        rest = f"{s['flow_s'] - sum(x['work_s'] for x in own[0]):.1f}" if shown else ""
        peak = f"{s['peak_mb']:,.0f}" if shown and s["peak_mb"] is not None else ""
        out = _fmt(s["out"]) + {"encode": " tok", "tokenizer": " ids", "kenlm-train": " ln"}.get(s["stage"], "")
        print(f"{s['stage']:<20} {s['work_s']:>7.1f} {flow:>7} {rest:>7} {_fmt(s['in']):>10} {out:>10} {peak:>12}")
    finish = ours["phase_seconds"].get("finish")
    if finish is not None:
        print(f"{'finish':<20} {0.0:>7.1f} {finish:>7.1f} {finish:>7.1f} {'':>10} {'':>10} "
              f"{ours['phase_peak_mb'].get('finish', 0.0):>12,.0f}   (funnel and lineage artifacts, exit)")
    work = sum(s["work_s"] for s in ours["stages"])
    rest = ours["seconds"] - work
    print(f"{'all stages':<20} {work:>7.1f} {ours['seconds']:>7.1f} {rest:>7.1f}   (the rest is "
          f"{100 * rest / ours['seconds']:.0f}% of the wall time; aim: < 5% of a 500 MB run)")

    if isinstance(theirs, dict):
        print("\ndatatrove, per executor run (wall s) and per block (seconds summed over its tasks)")
        head = f"{'step / block':<40} {'seconds':>8} {'docs in':>10} {'docs out':>10} {'peak RSS MB':>12}"
        print(head + "\n" + "-" * len(head))
        for step in theirs["steps"]:
            peak = f"{step['peak_mb']:,.0f}" if step.get("peak_mb") else ""
            print(f"{step['step']:<40} {step['seconds']:>8.1f} {'':>10} {'':>10} {peak:>12}")
            for b in step["blocks"]:
                secs = f"{b['seconds']:.1f}" if isinstance(b["seconds"], (int, float)) else ""
                print(f"  {b['name'][:38]:<38} {secs:>8} {_fmt(b['in']):>10} {_fmt(b['out']):>10}")


def compare(kind: str, mb: float, skip_datatrove: bool, keep: bool) -> None:
    info = corpus(kind, mb)
    work = Path(tempfile.mkdtemp(prefix=f"chatlike-bench-pipeline-{kind}-"))
    try:
        ours = run_chatlike(info, work / "chatlike")
        theirs: dict | str = ("skipped (--skip-datatrove)" if skip_datatrove
                              else run_datatrove(info, work / "datatrove"))
        print_comparison(info, ours, theirs)
        d, mb_s, gb = rates(info, ours["seconds"])
        peer = theirs if isinstance(theirs, dict) else None
        summary.record(f"whole data DAG, {kind.upper()} ({info['bytes'] / 1e6:.0f} MB)", "docs/s per core", d,
                       "datatrove nearest pipeline", rates(info, peer["seconds"])[0] if peer else None,
                       peak_mb=ours["peak_mb"], peer_peak_mb=peer["peak_mb"] if peer else None,
                       note=f"{gb:.2f} GB per core-hour")
    finally:
        if keep:
            print(f"(work folder kept: {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)


# The flows of the data DAG in order, as the phases of a run are named.
FLOWS = ("ingest", "clean", "langid", "quality", "kenlm-train", "perplexity", "dedup-exact", "dedup-minhash",
         "dedup-suffix-array", "sample", "tokenizer", "encode", "finish")

# What holds a stage's memory as the corpus grows (the scaling table's last column).
MEMORY_BOUND = {
    "ingest": "one input file per worker, streamed",
    "clean": "one part per worker (a part is one input file)",
    "langid": "one part per worker + the fastText model per worker",
    "quality": "one part per worker",
    "kenlm-train": "the reference text (fixed)",
    "perplexity": "one part + the KenLM model per worker",
    "dedup-exact": "the hashes of one of dedup.exact.partitions (4) hash partitions per select call",
    "dedup-minhash": "~24 B × 14 bands × documents / dedup.minhash.partitions per bucket call",
    "dedup-suffix-array": "~18 B per text byte up to dedup.suffix_array.max_group_bytes (512 MB of text → ~9 GB); "
                          "above it, groups of parts (repeats across groups are not removed)",
    "sample": "the sampled rows (sample.max_bytes)",
    "tokenizer": "the sample's text (HF tokenizers' pair counts)",
    "encode": "one part per worker",
    "finish": "the run's manifests (the funnel and lineage pictures)",
}


def scaling(kind: str, base_mb: float) -> None:
    runs = []
    for factor in (1, 2, 4):
        info = corpus(kind, base_mb * factor)
        work = Path(tempfile.mkdtemp(prefix="chatlike-bench-scaling-"))
        try:
            runs.append((factor, info, run_chatlike(info, work)))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    base = runs[0][2]["seconds"]
    print(f"\nscaling of `chatlike run` (ingest → encode, runner.kind: process, {WORKERS} workers), {kind.upper()}")
    head = f"{'input':>6} {'MB':>7} {'docs':>9} {'wall s':>8} {'time ×':>7} {'GB/core-h':>10} {'peak RSS MB':>12}"
    print(head + "\n" + "-" * len(head))
    for factor, info, r in runs:
        print(f"{factor:>5}× {info['bytes'] / 1e6:>7.0f} {info['docs']:>9,} {r['seconds']:>8.1f} "
              f"{r['seconds'] / base:>7.2f} {rates(info, r['seconds'])[2]:>10.2f} {r['peak_mb']:>12,.0f}")
    ratio = runs[-1][2]["seconds"] / base
    print(f"aim: 4× the input in ≤ {AIM_SCALING:g}× the time: {ratio:.2f}× — {'met' if ratio <= AIM_SCALING else 'unmet'}")
    print("\nper stage: flow wall seconds and peak RSS of the whole tree (MB) at 1×, 2×, 4×, and what bounds the "
          "stage's memory (the corpus's files grow with it here: 8 files whatever the size)")
    head = f"{'stage':<20} " + " ".join(f"{'s ' + str(f) + '×':>8}" for f, _, _ in runs) + " " + \
        " ".join(f"{'MB ' + str(f) + '×':>8}" for f, _, _ in runs) + "  memory bounded by"
    print(head + "\n" + "-" * len(head))
    for name in FLOWS:
        secs = [r["phase_seconds"].get(name) for _, _, r in runs]
        peaks = [r["phase_peak_mb"].get(name) for _, _, r in runs]
        if all(v is None for v in secs):
            continue
        print(f"{name:<20} " + " ".join(f"{v:>8.1f}" if v is not None else f"{'':>8}" for v in secs) + " "
              + " ".join(f"{v:>8,.0f}" if v is not None else f"{'':>8}" for v in peaks)
              + f"  {MEMORY_BOUND.get(name, '')}")


# stages that run one task per part (their time should halve with twice the workers); the others are one task
PART_WISE = ("ingest", "clean", "langid", "quality", "perplexity", "dedup-exact", "dedup-minhash", "encode")


def parallel(kind: str, mb: float, repeat: int = 1) -> None:
    """`chatlike run` of one corpus with 1 process, 2 processes and a local Dask cluster of 2 single-thread
    worker processes (started here, as a user would start theirs): wall seconds per stage and the speed-ups.
    With `repeat` > 1 the three runs go round by round (one of each, then again), and the table gives each
    stage's median seconds, the speed-up of the medians and, in brackets, each round's: on a 2-core machine one
    run's stage can be off by half its time."""
    from distributed import LocalCluster

    info = corpus(kind, mb)
    # the baseline is one core of work: one process whose tokenizers thread pool (encode) has one thread too,
    # as it would otherwise take both cores on its own (encode_batch_fast: 1.98x with 2 threads in one process)
    runners = {"1 process": ({"kind": "process", "workers": 1}, {"RAYON_NUM_THREADS": "1"}),
               f"{WORKERS} processes": ({"kind": "process", "workers": WORKERS}, None),
               f"dask, {WORKERS} workers": (None, None)}  # the cluster's address, once it is started
    rounds: list[list[dict]] = []
    for r in range(repeat):
        runs = []
        for label, (runner, env_extra) in runners.items():
            work = Path(tempfile.mkdtemp(prefix="chatlike-bench-parallel-"))
            try:
                with (LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None) if runner is None else contextlib.nullcontext()) as started:
                    runs.append(run_chatlike(info, work, runner or {"kind": "dask",
                                                                    "dask_address": started.scheduler_address},
                                             env_extra))
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if repeat > 1:
                print(f"round {r + 1}/{repeat}, {label}: {runs[-1]['seconds']:.1f} s", flush=True)
        rounds.append(runs)

    def seconds(i: int, name: str) -> list[float]:
        return [v for v in (runs[i]["phase_seconds"].get(name) for runs in rounds) if v is not None]

    def speedups(name: str, i: int) -> str:
        ups = [runs[0]["phase_seconds"][name] / runs[i]["phase_seconds"][name] for runs in rounds
               if runs[0]["phase_seconds"].get(name) and runs[i]["phase_seconds"].get(name)]
        return "" if len(ups) < 2 else "(" + " ".join(f"{u:.2f}" for u in ups) + ")"

    print(f"\nparallel scaling of `chatlike run` (ingest → encode), {describe(info)}: stage flow wall seconds"
          + (f", median of {repeat} rounds" if repeat > 1 else "") + f"; aims for the part-wise stages: {WORKERS} "
          f"processes ≥ {AIM_PROCESS_SPEEDUP:g}× one, Dask ≥ {AIM_DASK_SPEEDUP:g}× (one process: one thread of HF "
          "tokenizers too, RAYON_NUM_THREADS=1)")
    labels = list(runners)
    wide = 6 if repeat == 1 else 6 + 5 * repeat + 2
    head = (f"{'stage':<20} {labels[0]:>10} {labels[1]:>12} {'×':>{wide}} {labels[2]:>17} {'×':>{wide}}  part-wise")
    print(head + "\n" + "-" * len(head))
    unmet = []
    for name in FLOWS:
        a, b, c = (statistics.median(v) if (v := seconds(i, name)) else None for i in range(3))
        if a is None:
            continue
        up_b = a / b if b else None
        up_c = a / c if c else None
        wise = name in PART_WISE
        if wise and ((up_b or 0) < AIM_PROCESS_SPEEDUP or (up_c or 0) < AIM_DASK_SPEEDUP):
            unmet.append(name)
        print(f"{name:<20} {a:>10.1f} {_num(b, 1):>12} {(_num(up_b, 2) + ' ' + speedups(name, 1)).strip():>{wide}} "
              f"{_num(c, 1):>17} {(_num(up_c, 2) + ' ' + speedups(name, 2)).strip():>{wide}}  "
              f"{'yes' if wise else 'no (artifacts, exit)' if name == 'finish' else 'no (one task)'}")
    total = [statistics.median(runs[i]["seconds"] for runs in rounds) for i in range(3)]
    print(f"{'whole command':<20} {total[0]:>10.1f} {total[1]:>12.1f} {total[0] / total[1]:>{wide}.2f} "
          f"{total[2]:>17.1f} {total[0] / total[2]:>{wide}.2f}")
    print("aims met for every part-wise stage" if not unmet else f"aims unmet for: {', '.join(unmet)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_MB} MB of each corpus (a few minutes)")
    ap.add_argument("--corpus", choices=["warc", "jsonl", "both"], default="both")
    ap.add_argument("--mb", type=float, help="corpus size in MB (default: quick or full size)")
    ap.add_argument("--skip-datatrove", action="store_true")
    ap.add_argument("--scaling", action="store_true", help="chatlike at 1×, 2×, 4× of --scaling-mb")
    ap.add_argument("--scaling-mb", type=float, default=QUICK_MB)
    ap.add_argument("--parallel", action="store_true", help="1 process vs 2 vs a local Dask cluster (--mb, default "
                    f"{QUICK_MB})")
    ap.add_argument("--repeat", type=int, default=1, help="--parallel: rounds of the three runs (medians)")
    ap.add_argument("--keep", action="store_true", help="keep the work folders (datasets, logs)")
    ap.add_argument("--datatrove-worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.datatrove_worker:
        datatrove_worker(json.loads((args.datatrove_worker / "corpus.json").read_text()), args.datatrove_worker)
        return
    kinds = ["warc", "jsonl"] if args.corpus == "both" else [args.corpus]
    if args.parallel:
        for kind in (["jsonl"] if args.corpus == "both" else kinds):
            parallel(kind, args.mb or QUICK_MB, max(1, args.repeat))
        return
    if args.scaling:
        for kind in (["jsonl"] if args.corpus == "both" else kinds):
            scaling(kind, args.scaling_mb)
        return
    print(f"corpus cache: {CACHE} (built once; delete it to rebuild)")
    failed = []
    for kind in kinds:
        mb = args.mb or (QUICK_MB if args.quick else FULL_MB[kind])
        try:
            compare(kind, mb, args.skip_datatrove, args.keep)
        except SystemExit as e:  # one corpus failing still measures the other
            print(f"\n{kind.upper()}: {e}")
            failed.append(kind)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
