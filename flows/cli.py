"""The `chatlike` command line: run the pipeline, inspect runs and lineage, collect garbage, serve Prefect.

Errors are one line on stderr and exit code 2; `--debug` shows the traceback.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, help="From raw chats and web crawl to a model that chats like you.")
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)
_state = {"debug": False}


class _NoTraceback(logging.Filter):
    """Keeps Prefect's console log to one line per error unless --debug."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


def _quiet_tracebacks() -> None:
    if _state["debug"]:
        return
    from prefect.logging.configuration import setup_logging

    setup_logging()
    for logger in [logging.getLogger(), *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict))]:
        for handler in getattr(logger, "handlers", []):
            if isinstance(handler, logging.StreamHandler) and not any(isinstance(f, _NoTraceback) for f in handler.filters):
                handler.addFilter(_NoTraceback())


def _fail(e: BaseException) -> None:
    if _state["debug"]:
        raise e
    msg = str(e) or type(e).__name__
    if not isinstance(e, (ValueError, OSError, RuntimeError)):
        msg = f"{type(e).__name__}: {msg} (an internal error; --debug shows the traceback)"
    err_console.print(f"[bold red]error:[/] {msg}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _check_data_root(data_root: str) -> None:
    """Before Prefect starts (seconds): the data root exists or can be created, and takes files."""
    root = Path(data_root)
    try:
        root.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=root).close()
    except OSError as e:
        raise ValueError(f"data_root {root}: cannot write there ({e.strerror or e})") from None


def _prefect_environment(home: Path) -> None:
    """Prefect reads its settings when it is imported, so this comes first: its home (settings, the SQLite
    database of runs) is `home` rather than ~/.prefect, and no usage data is sent (the server's analytics, the
    client's telemetry). Variables the user has set win."""
    os.environ.setdefault("PREFECT_HOME", str(home.resolve()))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")  # a busy machine starts slowly


def _prepare_run(cfg) -> None:
    """What a command that runs stages needs before Prefect is imported: a writable data root, the Prefect home
    beside it (`.prefect/` next to `data/`: the checkout's own, where `chatlike serve` keeps its database too)
    and SIGINT/SIGTERM stopping every child process (flows/shutdown.py). The last two only in the script's own
    process: inside a test, Prefect is imported already and the signals are pytest's."""
    from flows.shutdown import owns_this_process, stop_on_signals

    _check_data_root(cfg.data_root)
    if owns_this_process():
        _prefect_environment(Path(cfg.data_root).resolve().parent / ".prefect")
        stop_on_signals()


def _start_prefect():
    """The command's temporary Prefect server, started before the flows are imported so that the two overlap
    (flows/temporary_server.py); None inside another program (the tests), where Prefect is that program's."""
    from flows.shutdown import owns_this_process
    from flows.temporary_server import start_temporary_server

    return start_temporary_server() if owns_this_process() else None


def _start_workers(cfg, stages: list[str]) -> None:
    """The runner's workers (the process pool's, a Dask cluster's) made ready now, importing the shard code while this
    command imports Prefect and waits for its server (flows/workers.py); only in the script's own process."""
    from flows.shutdown import owns_this_process
    from flows.workers import start_workers

    if owns_this_process():
        start_workers(cfg.runner, stages)


@app.callback()
def _main(debug: bool = typer.Option(False, "--debug", help="Show tracebacks.")) -> None:
    _state["debug"] = debug


@app.command()
def run(
    config: Path = typer.Option(Path("configs/demo.yaml"), "--config", "-c", help="Pipeline config (YAML)."),
    start_at: str | None = typer.Option(None, "--start-at", help="First stage to run."),
    stop_after: str | None = typer.Option(None, "--stop-after", help="Last stage to run."),
    only: list[str] | None = typer.Option(None, "--only", help="Run only these stages (repeatable)."),
    force: bool = typer.Option(False, "--force", help="Recompute even when the output is up to date."),
) -> None:
    """Run the pipeline (Prefect's ephemeral mode unless PREFECT_API_URL points at a server)."""
    try:
        from flows.config import load_config
        from flows.plans import select_stages

        cfg = load_config(config)
        stages = select_stages(start_at, stop_after, only)
        _prepare_run(cfg)
        server = _start_prefect()
        _start_workers(cfg, stages)
        console.print(f"[bold]chatlike[/] {cfg.name}: {' → '.join(stages)}")
        _quiet_tracebacks()
        from flows.pipeline import foreground_run_settings, pipeline_flow
        from flows.temporary_server import temporary_server_ready

        with temporary_server_ready(server), foreground_run_settings():
            outputs = pipeline_flow(config=str(config), start_at=start_at, stop_after=stop_after, only=only,
                                    force=force)
    except Exception as e:  # noqa: BLE001 - the CLI turns every failure into one line
        _fail(e)
        return
    _print_status(cfg, only_stages=list(outputs))


def _short(path: str, data_root: str) -> str:
    try:
        return str(Path(path).relative_to(data_root))
    except ValueError:
        return path


def _print_status(cfg, only_stages: list[str] | None = None) -> None:
    from flows.report import unreadable_files
    from storage.dataset import is_dataset, read_manifest
    from storage.runs import read_run_pointer

    pointer = read_run_pointer(cfg.data_root, cfg.name)
    table = Table(title=f"run '{cfg.name}' in {cfg.data_root}")
    for col in ("stage", "dataset", "fingerprint", "rows in", "rows out", "removed (reasons)", "seconds"):
        table.add_column(col, justify="right" if col in ("rows in", "rows out", "seconds") else "left")
    from flows.plans import STAGE_NAMES

    entries = pointer.get("stages", {})

    def order(name: str) -> tuple[int, str]:
        for i, stage in enumerate(STAGE_NAMES):
            if name == stage or name.startswith(stage + "-"):
                return i, "" if name == stage else name  # a stage's sub-datasets come before its output
        return len(STAGE_NAMES), name

    unreadable: dict[str, str] = {}
    for stage in sorted(entries, key=lambda n: (order(n)[0], order(n)[1] == "", order(n)[1])):
        entry = entries[stage]
        base = stage.split("-")[0]
        if only_stages is not None and base not in only_stages and stage not in only_stages:
            continue
        path = entry["path"]
        if not is_dataset(path):
            table.add_row(stage, path, entry["fingerprint"][:16], "", "", "[red]missing[/]", "")
            continue
        m = read_manifest(path)
        reasons = ", ".join(
            f"{k.split('_', 1)[1]}={v}" for k, v in m.counts.items() if k.startswith(("dropped_", "skipped_")) and v
        )
        if skipped_files := unreadable_files(m):
            reasons = ", ".join(filter(None, [f"unreadable_files={len(skipped_files)}", reasons]))
            unreadable.update(skipped_files)
        table.add_row(
            stage, _short(path, cfg.data_root), m.fingerprint[:16], f"{m.counts.get('in', '')}", f"{m.counts.get('out', m.rows)}", reasons,
            f"{m.seconds:.2f}",
        )
    console.print(table)
    if unreadable:
        console.print(f"[yellow]{len(unreadable)} unreadable input file(s) skipped (ingest.on_unreadable: skip):[/]")
        for why in unreadable.values():
            console.print(f"  {why}", highlight=False, soft_wrap=True)


@app.command()
def status(
    config: Path = typer.Option(Path("configs/demo.yaml"), "--config", "-c"),
    as_json: bool = typer.Option(False, "--json", help="Print the run pointer as JSON."),
    path_of: str | None = typer.Option(None, "--path", help="Print only this stage's dataset path."),
) -> None:
    """Which dataset each stage of this config's last run used, with row counts."""
    try:
        from flows.config import load_config
        from storage.runs import read_run_pointer

        cfg = load_config(config)
        if path_of:
            entry = read_run_pointer(cfg.data_root, cfg.name).get("stages", {}).get(path_of)
            if entry is None:
                raise ValueError(f"no '{path_of}' dataset recorded for config '{cfg.name}' (run the pipeline first)")
            print(entry["path"])
            return
        if as_json:
            print(json.dumps(read_run_pointer(cfg.data_root, cfg.name), indent=2, sort_keys=True))
            return
        _print_status(cfg)
    except Exception as e:  # noqa: BLE001
        _fail(e)


@app.command("eval")
def eval_(
    config: Path = typer.Option(Path("configs/demo.yaml"), "--config", "-c", help="Pipeline config (YAML)."),
    force: bool = typer.Option(False, "--force", help="Measure again even when the result is up to date."),
) -> None:
    """How much the base, SFT and LoRA models chat like the person: runs the persona-eval stage (an up-to-date
    result is reused) and prints its likeness table."""
    try:
        from flows.config import load_config
        from flows.plans import plan_stage
        from storage.runs import record_stage
        from tasks.likeness.stage import TABLE_FILE

        cfg = load_config(config)
        _prepare_run(cfg)
        plan = plan_stage(cfg, "persona-eval")
        path = str(plan.existing) if plan is not None and plan.existing is not None and not force else None
        if path is not None:  # up to date: no need to start Prefect
            record_stage(cfg.data_root, cfg.name, "persona-eval", path)
        elif plan is not None:
            server = _start_prefect()
            _quiet_tracebacks()
            from flows.evaluation import persona_eval_flow
            from flows.pipeline import foreground_run_settings
            from flows.temporary_server import temporary_server_ready

            with temporary_server_ready(server), foreground_run_settings():
                path = persona_eval_flow(config=str(config), force=force)
        if path is None:
            raise ValueError("persona-eval makes nothing until sft_data.target_author names the person to imitate")
        print((Path(path) / TABLE_FILE).read_text(encoding="utf-8"))
    except Exception as e:  # noqa: BLE001
        _fail(e)


@app.command()
def lineage(
    path: Path = typer.Argument(..., help="A dataset folder, or a training run's folder or checkpoint."),
    png: Path | None = typer.Option(None, "--png", help="Draw the lineage graph into this PNG file instead."),
) -> None:
    """The datasets a dataset (or checkpoint) was built from, down to the raw files: a text tree, or a picture."""
    try:
        from storage.lineage import lineage_graph, lineage_lines

        graph = lineage_graph(path)
        if png is None:
            for line in lineage_lines(graph):
                print(line)
            return
        from flows.lineage_report import lineage_png

        root = graph.nodes[graph.roots[0]]
        lineage_png(graph, png, title=f"Lineage of {root.stage} {root.fingerprint[:16]}")
        print(f"{png}: {len(graph.datasets)} datasets, {len(graph.edges)} edges")
    except Exception as e:  # noqa: BLE001
        _fail(e)


@app.command()
def gc(
    config: Path = typer.Option(Path("configs/demo.yaml"), "--config", "-c", help="Any config using the data root."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
) -> None:
    """Delete datasets that no run pointer uses (nor their ancestors), and stale temp directories."""
    try:
        from flows.config import load_config
        from storage.dataset import list_datasets, list_temp_dirs
        from storage.runs import all_pointed_datasets

        cfg = load_config(config)
        keep = all_pointed_datasets(cfg.data_root)
        doomed = [p for p in list_datasets(cfg.data_root) if p.resolve() not in keep]
        doomed += list_temp_dirs(cfg.data_root)
        if not doomed:
            console.print("nothing to delete")
            return
        size = sum(f.stat().st_size for d in doomed for f in d.rglob("*") if f.is_file())
        for d in doomed:
            console.print(f"  {d}")
        console.print(f"{len(doomed)} director{'y' if len(doomed) == 1 else 'ies'}, {size / 1e6:,.1f} MB")
        if not yes and not typer.confirm("delete them?"):
            raise typer.Exit(1)
        for d in doomed:
            shutil.rmtree(d)
        console.print("deleted")
    except typer.Exit:
        raise
    except Exception as e:  # noqa: BLE001
        _fail(e)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on (loopback unless --allow-remote)."),
    port: int = typer.Option(4200, help="Port of the Prefect server."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="Let --host be an address other machines "
                                      "reach, although Prefect's API has no login."),
) -> None:
    """Start a local Prefect server, create the work pools, deploy every flow and start the workers; SIGINT or
    SIGTERM stops them all."""
    try:
        from flows.serve import PREFECT_EXPOSES, PREFECT_PROTECT, exposure_warning
        from flows.shutdown import stop_on_signals

        warning = exposure_warning(host, port, allow_remote, PREFECT_EXPOSES, PREFECT_PROTECT)
        if warning:
            err_console.print(warning, highlight=False, soft_wrap=True, markup=False)
        _prefect_environment(Path.cwd() / ".prefect")  # the server's database, beside its prefect.yaml
        stop_on_signals()
        from flows.serve import serve_forever

        serve_forever(Path.cwd(), host, port)
    except Exception as e:  # noqa: BLE001
        _fail(e)


commoncrawl_app = typer.Typer(no_args_is_help=True, help="Common Crawl helpers.")
app.add_typer(commoncrawl_app, name="commoncrawl")


def _mount_subcommands() -> None:
    from flows.cli_chat import chat_app
    from flows.cli_langid import langid_app
    from flows.cli_model import model_app
    from flows.cli_whatsapp import whatsapp_app

    app.add_typer(whatsapp_app, name="whatsapp", help="Inspect WhatsApp exports.")
    app.add_typer(chat_app, name="chat", help="Chat with a trained checkpoint (optionally with a LoRA adapter).")
    app.add_typer(langid_app, name="langid", help="Train an own fastText language model; predict languages.")
    app.add_typer(model_app, name="model", help="Import a Hugging Face base model; export to Hugging Face or GGUF.")


_mount_subcommands()


@commoncrawl_app.command("fetch")
def commoncrawl_fetch(
    crawl: str = typer.Option(..., "--crawl", help="Crawl id, e.g. CC-MAIN-2024-22."),
    kind: str = typer.Option("wet", "--kind", help="wet, warc or wat."),
    files: int = typer.Option(1, "--files", help="How many files of the crawl's path list."),
    out: Path = typer.Option(Path("inputs/commoncrawl"), "--out", help="Folder to download into."),
    base_url: str = typer.Option("https://data.commoncrawl.org/", "--base-url", help="Mirror to download from."),
    retries: int = typer.Option(5, "--retries"),
) -> None:
    """Download a crawl's path list and the first N files, resuming and verifying each."""
    try:
        from tasks.cc_fetch import fetch_crawl

        logging.basicConfig(level=logging.WARNING)
        report = fetch_crawl(crawl, kind, files, out, base_url=base_url, retries=retries)
        for f in report.files:
            note = " (already there)" if f.skipped_existing else (" (resumed)" if f.resumed else "")
            console.print(f"{f.path}  {f.bytes / 1e6:,.1f} MB{note}")
        console.print(f"{len(report.files)} file(s), {report.total_bytes / 1e6:,.1f} MB in {out}")
    except Exception as e:  # noqa: BLE001
        _fail(e)


def main() -> None:
    """The `chatlike` script. A command stopped by SIGINT or SIGTERM exits with 128 + the signal's number."""
    from flows.shutdown import own_this_process

    own_this_process()
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(128 + (_stop_signal() or 2))
    except SystemExit:
        if _stop_signal() is not None:
            sys.exit(128 + _stop_signal())
        raise


def _stop_signal() -> int | None:
    from flows.shutdown import stopped_by

    return stopped_by()


if __name__ == "__main__":
    main()
