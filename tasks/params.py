"""Parameters of every stage, as strict pydantic models (unknown keys are errors).

They live here, below `flows/`, so that the plain stage functions in `tasks/` can take them directly;
`flows.config.PipelineConfig` composes them into one typed config that the Prefect UI renders as a form.
Only the parameters that change a stage's output go into its fingerprint (see `fingerprint_params`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from tasks.base import StrictModel
from tasks.cleaning import CleanRules

__all__ = ["StrictModel"]


InputKind = Literal["auto", "whatsapp", "whatsapp-db", "telegram", "messenger", "discord", "commoncrawl", "wet", "warc",
                    "jsonl", "text"]


class InputSpec(StrictModel):
    """Files to ingest: a path, a directory or a glob (relative paths are taken from the working directory)."""

    path: str
    kind: InputKind = "auto"
    source: str | None = Field(default=None, description="Value of the `source` column; default by kind.")
    contacts: str | None = Field(
        default=None, description="WhatsApp databases (msgstore.db): the wa.db that names its contacts, when it is "
        "not beside it (checked when the inputs are read; it wins over a wa.db beside the database).")

    @field_validator("path")
    @classmethod
    def _not_empty(cls, v: str) -> str:
        # "" would be the working directory, ingested recursively with everything in it (configs, the data root)
        if not v.strip():
            raise ValueError("is empty: name a file, a folder or a glob (use '.' for the working directory)")
        return v

    @field_validator("contacts")
    @classmethod
    def _names_a_file(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("is empty: name the wa.db file, or leave the key out")
        return v


class IngestParams(StrictModel):
    inputs: list[InputSpec] = Field(default_factory=list)
    session_gap_hours: float = Field(6.0, gt=0, description="WhatsApp: a gap longer than this starts a new document.")
    pseudonymize: bool = Field(False, description="WhatsApp: replace authors by stable pseudonyms in documents.")
    pseudonym_salt: str = ""
    date_order: Literal["auto", "day_first", "month_first"] = "auto"
    export_year: int | None = Field(
        None, ge=1990, le=2200, description="WhatsApp .txt exports whose headers name months and give no year (old "
        "Android, 2012-2014): the year of the last message; by default the current year, said in the chat's stats.")
    text_split: Literal["file", "paragraph", "line"] = Field(
        "file", description="Plain text: one document per file, per blank-line paragraph, or per line."
    )
    jsonl_text_field: str = "text"
    database_owner: str = Field(
        "me", description="WhatsApp databases (msgstore.db, ChatStorage.sqlite): the author name of the phone "
        "owner's own messages; set it to the name their .txt exports show, so sft-data's target matches both.")
    database_timezone: str = Field(
        "UTC", description="WhatsApp databases, Messenger, Discord and Telegram records without a local date: the "
        "IANA time zone their UTC times are written in (the .txt exports' local time).")
    on_unreadable: Literal["fail", "skip"] = Field(
        "fail",
        description="A file that cannot be read at all (not a WARC file, a zip without a chat, binary data): "
        "`fail` stops the run naming every such file; `skip` ingests the others and lists them in the run "
        "summary, `chatlike status` and the ingest report.",
    )

    @field_validator("database_timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"'{v}' is not an IANA time zone (e.g. 'Europe/Paris', 'UTC')") from None
        return v

    def fingerprint_params(self) -> dict:
        # Whether a run may go on without the unreadable files, not what any file gives: a `fail` run refuses a
        # dataset published under `skip` that holds some (flows/ingest.py), instead of making another one.
        return self.model_dump(mode="json", exclude={"on_unreadable"})


class CleanParams(StrictModel):
    rules: CleanRules = Field(default_factory=CleanRules)
    min_chars: int = Field(1, ge=0, description="Documents shorter than this after cleaning are dropped.")


class RunnerParams(StrictModel):
    """How per-shard tasks run: threads, processes, or an existing Dask cluster (address)."""

    kind: Literal["thread", "process", "dask"] = "thread"
    workers: int | None = Field(None, ge=1, description="Default: the number of CPU cores.")
    dask_address: str | None = None

    @model_validator(mode="after")
    def _dask_needs_address(self) -> RunnerParams:
        if self.kind == "dask" and not self.dask_address:
            raise ValueError("runner.kind 'dask' needs runner.dask_address (e.g. tcp://127.0.0.1:8786)")
        return self
