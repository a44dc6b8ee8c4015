"""`chatlike whatsapp parse PATH`: how a WhatsApp export reads, as one JSON object per message on stdout.

Each line is `{"timestamp": "2023-12-31T21:05:00", "author": "Sam", "text": "…", "kind": "text"}` (local time as
written in the export, no time zone; `author` null for system lines). Warnings go to stderr. A file that cannot be
read, or that is no export, is one line on stderr and exit code 2; `chatlike --debug` shows the traceback.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import NoReturn

import typer

whatsapp_app = typer.Typer(
    add_completion=False, no_args_is_help=True, help='Inspect WhatsApp "Export chat" files (.txt or .zip).'
)


class DateOrder(str, Enum):
    dmy = "dmy"
    mdy = "mdy"
    ymd = "ymd"
    ydm = "ydm"


@whatsapp_app.callback()
def _whatsapp() -> None:
    # a callback keeps `parse` a subcommand: a Typer with one command would otherwise run it without its name
    pass


@whatsapp_app.command("parse")
def parse(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help='The export: the .txt, or the .zip made with "Attach media".'),
    date_order: DateOrder | None = typer.Option(
        None,
        "--date-order",
        help="Order of day and month, used only when no date of the file tells (no day above 12).",
    ),
    export_year: int | None = typer.Option(
        None, "--export-year", help="Year of the last message, for old exports whose dates name no year."
    ),
) -> None:
    """Print every message of an export as one JSON object per line: timestamp, author, text, kind."""
    from tasks.whatsapp import NotAnExportError, parse_whatsapp_export

    warnings = _WarningsKept()
    try:
        with warnings:
            chat = parse_whatsapp_export(path, date_order=date_order.value if date_order else None,
                                         export_year=export_year)
    except Exception as e:  # noqa: BLE001 - every failure is one line on stderr
        if _debug(ctx):
            raise
        if isinstance(e, NotAnExportError) and e.lines:
            _fail(f"{e}; its first lines: " + " | ".join(_quoted(line) for line in e.lines))
        if isinstance(e, (ValueError, OSError)):
            _fail(str(e))
        _fail(f"{path}: {type(e).__name__}: {e} (an internal error; chatlike --debug shows the traceback)")
    for record in warnings.records:
        typer.echo(f"warning: {record.getMessage()}", err=True)
    if chat.stats["date_order_ambiguous"]:
        typer.echo(
            f"warning: {path}: no day above 12 in any date, read as {chat.stats['date_order']} "
            f"({chat.stats['date_order_source']}; --date-order chooses)",
            err=True,
        )
    spelled = chat.stats.get("spelled_dates")
    if spelled and spelled.get("year_from") == "current year":
        typer.echo(f"warning: {path}: its dates give no year; the last message is taken to be of this year "
                   "(--export-year chooses)", err=True)
    _print_messages(chat.messages)


def _print_messages(messages: Sequence) -> None:
    """JSON lines in UTF-8, whatever the terminal's encoding; a closed pipe (`| head`) ends the output quietly."""
    out = getattr(sys.stdout, "buffer", None)
    try:
        for start in range(0, len(messages), 1000):
            lines = "".join(
                json.dumps(
                    {
                        "timestamp": m.timestamp.isoformat() if m.timestamp else None,
                        "author": m.author,
                        "text": m.text,
                        "kind": m.kind,
                    },
                    ensure_ascii=False,
                )
                + "\n"
                for m in messages[start : start + 1000]
            )
            if out is not None:
                out.write(lines.encode("utf-8", "surrogatepass"))
            else:
                sys.stdout.write(lines)
        sys.stdout.flush()
    except BrokenPipeError:
        # what is left to flush would fail again at exit: send it nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class _WarningsKept(logging.Handler):
    """Holds the parser's warnings while it runs: printed after a successful parse, dropped when the file fails
    (its error is then the only line on stderr)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self._logger = logging.getLogger("tasks")
        self._propagate = True

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> _WarningsKept:
        self._propagate = self._logger.propagate
        self._logger.addHandler(self)
        self._logger.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.propagate = self._propagate


def _quoted(line: str) -> str:
    """A line as a JSON string, cut at 80 characters: control characters and quotes stay visible."""
    return json.dumps(line[:80] + ("…" if len(line) > 80 else ""), ensure_ascii=False)


def _debug(ctx: typer.Context) -> bool:
    """Whether `chatlike --debug` was given (the root command's option, when this app is mounted under it)."""
    return bool(ctx.find_root().params.get("debug"))


def _fail(message: str) -> NoReturn:
    typer.echo("error: " + message.replace("\n", " "), err=True)
    raise typer.Exit(2)
