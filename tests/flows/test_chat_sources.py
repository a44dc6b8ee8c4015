"""Chat sources beyond WhatsApp's .txt export, through the pipeline to sft-data: a Telegram Desktop JSON export and
an Android WhatsApp database, detected by content, read into the messages dataset (with replies) and documents,
and turned into SFT examples of the person with the owner's name set for the database."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from storage.dataset import read_manifest
from storage.parquet import iter_rows, parquet_files
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

LINES = ["are you around tonight?", "yes, after the gym", "pizza or ramen?", "ramen obviously",
         "booked for eight", "perfect, see you there", "running ten minutes late", "no rush, I got a table",
         "did you finish the book?", "two chapters left, no spoilers", "the ending is wild", "I said no spoilers!"]


def _telegram(path: Path) -> Path:
    start = datetime(2025, 1, 6, 19, 0)
    messages = []
    for day in range(8):
        for i, text in enumerate(LINES):
            when = start + timedelta(days=day, minutes=3 * i)
            msg = {"id": len(messages) + 1, "type": "message", "date": when.isoformat(),
                   "from": "Sam" if i % 2 else "Priya", "from_id": "user2" if i % 2 else "user1", "text": text}
            if i == 1:
                msg["reply_to_message_id"] = msg["id"] - 1
            messages.append(msg)
    path.write_text(json.dumps({"name": "Priya", "type": "personal_chat", "id": 42, "messages": messages}),
                    encoding="utf-8")
    return path


def _msgstore(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE jid (_id INTEGER PRIMARY KEY, user TEXT, server TEXT, raw_string TEXT);
        CREATE TABLE chat (_id INTEGER PRIMARY KEY, jid_row_id INTEGER UNIQUE, subject TEXT);
        CREATE TABLE message (_id INTEGER PRIMARY KEY, chat_row_id INTEGER, from_me INTEGER, key_id TEXT,
                              sender_jid_row_id INTEGER, origination_flags INTEGER, timestamp INTEGER,
                              message_type INTEGER, text_data TEXT, status INTEGER);
        CREATE TABLE message_quoted (message_row_id INTEGER PRIMARY KEY, chat_row_id INTEGER, key_id TEXT);
        INSERT INTO jid VALUES (1, '447700900123', 's.whatsapp.net', '447700900123@s.whatsapp.net');
        INSERT INTO chat VALUES (1, 1, NULL);
        """
    )
    start = datetime(2025, 2, 3, 18, 0, tzinfo=timezone.utc)
    rows = []
    for day in range(8):
        for i, text in enumerate(LINES):
            ms = int((start + timedelta(days=day, minutes=2 * i)).timestamp() * 1000)
            rows.append((len(rows) + 1, 1, i % 2, f"K{len(rows):04d}", 0, 0, ms, 0, text, 0))
    db.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.execute("INSERT INTO message_quoted VALUES (2, 1, 'K0000')")
    db.commit()
    db.close()
    return path


def test_telegram_and_whatsapp_database_go_through_to_sft_data(tmp_path, prefect_harness):
    from flows.pipeline import pipeline_flow
    from model.hf import import_hf
    from tests.support import save_hf_base

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    _telegram(inbox / "result.json")
    _msgstore(inbox / "msgstore.db")
    (tmp_path / "hf").mkdir()
    save_hf_base(tmp_path / "hf", "LlamaForCausalLM")
    base = import_hf(tmp_path / "hf", tmp_path / "base")

    cfg = yaml.safe_load((ROOT / "configs" / "persona-from-base.yaml").read_text(encoding="utf-8"))
    cfg["data_root"] = str(tmp_path / "data")
    cfg["ingest"] = {"inputs": [{"path": str(inbox)}], "database_owner": "Sam", "database_timezone": "Europe/London"}
    cfg["sft_data"] = {**cfg["sft_data"], "target_author": "sam", "block_size": 64}
    cfg["sft"] = {**cfg.get("sft", {}), "base": str(base)}
    path = tmp_path / "persona.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")

    out = pipeline_flow(config=str(path), only=["ingest", "sft-data"])
    ingest = read_manifest(out["ingest"])
    assert ingest.counts["files_in"] == 2 and ingest.counts["messages"] == 2 * 8 * len(LINES)
    messages = list(iter_rows(parquet_files(ingest.path, "messages")))
    by_file = {name: [m for m in messages if m["source_file"] == name] for name in ("result.json", "msgstore.db")}
    assert all(len(rows) == 8 * len(LINES) for rows in by_file.values())
    assert {m["author"] for m in by_file["result.json"]} == {"Sam", "Priya"}
    for rows in by_file.values():
        assert rows[1]["reply_to"] == str(rows[0]["index"])  # the quoted message, by its index in the chat
    db_authors = {m["author"] for m in by_file["msgstore.db"]}
    assert "Sam" in db_authors and len(db_authors) == 2  # the owner by the configured name, the contact by number
    # the database's UTC times in the configured zone (GMT in February: unchanged; 18:00 as written)
    assert by_file["msgstore.db"][0]["timestamp"] == datetime(2025, 2, 3, 18, 0)
    docs = {r["source"] for r in iter_rows(parquet_files(ingest.path))}
    assert docs == {"telegram", "whatsapp"}

    sft = read_manifest(out["sft-data"])
    assert sft.stats["target_author"] == "Sam" and sft.counts["out"] > 0
    import pyarrow.parquet as pq

    text = json.dumps([pq.read_table(Path(sft.path) / f"{split}.parquet").to_pylist() for split in ("train", "val")],
                      default=str)
    assert "ramen obviously" in text  # Sam's lines from both sources are Assistant turns
