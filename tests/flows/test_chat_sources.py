"""Chat sources beyond WhatsApp's .txt export, through the pipeline to sft-data: a Telegram Desktop JSON export and
an Android WhatsApp database, detected by content, read into the messages dataset (with replies) and documents,
and turned into SFT examples of the person with the owner's name set for the database; and one chat given both as
a `.txt` export and as the phone's database, trained once."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.parquet as pq
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


def _conversation() -> list[tuple[int, datetime, str]]:
    """LINES on eight days from 2025-02-03 18:00 UTC: (from_me, UTC time, text), Priya first."""
    start = datetime(2025, 2, 3, 18, 0, tzinfo=timezone.utc)
    return [(i % 2, start + timedelta(days=day, minutes=2 * i), text)
            for day in range(8) for i, text in enumerate(LINES)]


def _msgstore(path: Path, messages: list[tuple[int, datetime, str]] | None = None) -> Path:
    """An Android msgstore.db (current schema) with one chat with +44 7700 900123: `messages` as (from_me, UTC time,
    text), the second message quoting the first."""
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
    rows = []
    for from_me, when, text in messages if messages is not None else _conversation():
        ms = int(when.timestamp() * 1000)
        rows.append((len(rows) + 1, 1, from_me, f"K{len(rows):04d}", 0, 0, ms, 0, text, 0))
    db.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.execute("INSERT INTO message_quoted VALUES (2, 1, 'K0000')")
    db.commit()
    db.close()
    return path


def _ingest_to_sft_data(tmp_path: Path, inbox: Path, **ingest) -> dict:
    """ingest and sft-data of `inbox` (sources detected by content) with a tiny imported base's tokenizer and
    "sam" as the target; returns the pipeline's stage → dataset paths."""
    from flows.pipeline import pipeline_flow
    from model.hf import import_hf
    from tests.support import save_hf_base

    (tmp_path / "hf").mkdir()
    save_hf_base(tmp_path / "hf", "LlamaForCausalLM")
    base = import_hf(tmp_path / "hf", tmp_path / "base")

    cfg = yaml.safe_load((ROOT / "configs" / "persona-from-base.yaml").read_text(encoding="utf-8"))
    cfg["data_root"] = str(tmp_path / "data")
    cfg["ingest"] = {"inputs": [{"path": str(inbox)}], **ingest}
    cfg["sft_data"] = {**cfg["sft_data"], "target_author": "sam", "block_size": 64}
    cfg["sft"] = {**cfg.get("sft", {}), "base": str(base)}
    path = tmp_path / "persona.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return pipeline_flow(config=str(path), only=["ingest", "sft-data"])


def _examples(sft_data: str) -> list[dict]:
    import pyarrow.parquet as pq

    return [row for split in ("train", "val") for row in pq.read_table(Path(sft_data) / f"{split}.parquet").to_pylist()]


def test_telegram_and_whatsapp_database_go_through_to_sft_data(tmp_path, prefect_harness):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    _telegram(inbox / "result.json")
    _msgstore(inbox / "msgstore.db")
    out = _ingest_to_sft_data(tmp_path, inbox, database_owner="Sam", database_timezone="Europe/London")
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
    text = json.dumps(_examples(sft.path), default=str)
    assert "ramen obviously" in text  # Sam's lines from both sources are Assistant turns
    assert sft.counts["exports_merged"] == 0  # the same lines a month apart: two chats, not one


# One evening a day for four days in June (Paris, UTC+2): Priya asks, Sam answers. The phone's export holds days 1-3;
# the database (read as UTC, no owner name) lost day 1 to a reinstall and holds day 4, written after the export.
DAYS = [
    [("Priya", "did the plumber come?"), ("Sam", "yes, sink fixed at last"),
     ("Priya", "how much?"), ("Sam", "less than I feared")],
    [("Priya", "film tonight?"), ("Sam", "only if it is short"),
     ("Priya", "ninety minutes"), ("Sam", "deal, bring snacks")],
    [("Priya", "are you at the market?"), ("Sam", "by the cheese stall"),
     ("Priya", "get the goat one"), ("Sam", "already in the bag")],
    [("Priya", "bike ride on sunday?"), ("Sam", "if it does not rain"),
     ("Priya", "forecast says sun"), ("Sam", "then I am in")],
]
PARIS = timedelta(hours=2)


def _when(day: int, i: int) -> datetime:
    """Local (Paris) time of line i of day `day`, to the second: minutes apart, some seconds into the minute."""
    return datetime(2025, 6, 14 + day, 20, 3 * i, 7 + 11 * i)


def _export(path: Path, days: range) -> Path:
    """What WhatsApp's "Export chat" writes on Android with a 24 h clock: local time, minutes only, names."""
    lines = [f"{_when(d, i):%d/%m/%Y, %H:%M} - {who}: {text}" for d in days for i, (who, text) in enumerate(DAYS[d])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_chat_exported_and_in_the_database_is_trained_once(tmp_path, prefect_harness):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    _export(inbox / "priya_export.txt", range(0, 3))
    _msgstore(inbox / "msgstore.db", [
        (int(who == "Sam"), (_when(d, i) - PARIS).replace(tzinfo=timezone.utc, microsecond=1000 * (17 + 40 * i)), text)
        for d in range(1, 4) for i, (who, text) in enumerate(DAYS[d])
    ])
    out = _ingest_to_sft_data(tmp_path, inbox)  # no database_owner, no database_timezone: "me", UTC

    ingest = read_manifest(out["ingest"])
    assert ingest.counts["messages"] == 12 + 12  # both copies are in the messages dataset
    # the corpus holds the chat once: one document per evening (days 1-4), each line of it once
    docs = [row for part in sorted(Path(out["ingest"]).glob("part-*.parquet"))
            for row in pq.read_table(part).to_pylist()]
    assert len(docs) == 4 and ingest.counts["out"] == 4
    assert ingest.counts["skipped_duplicate_chat_copy"] == 2  # the copies had 3 + 3 evenings
    lines = [line for doc in docs for line in doc["text"].split("\n")]
    assert sorted(lines) == sorted(f"{who}: {text}" for day in DAYS for who, text in day)
    [in_corpus] = ingest.stats["merged_chats"]
    assert in_corpus["documents"] == 4 and in_corpus["shared_messages"] == 8
    sft = read_manifest(out["sft-data"])
    assert sft.counts["exports_merged"] == 1 and sft.counts["dropped_duplicate"] == 8  # days 2 and 3
    [merged] = sft.stats["merged_chats"]
    assert {c["source_file"] for c in merged["copies"]} == {"priya_export.txt", "msgstore.db"}
    assert merged["shared_messages"] == 8 and merged["offset_seconds"] == 2 * 3600
    # the database's "me" and phone number are the export's names
    assert sft.stats["target_author"] == "Sam" and set(sft.stats["authors"]) == {"Sam", "Priya"}

    examples = _examples(sft.path)
    replies = [row["turns"][-1]["text"] for row in examples]
    sam = [text for day in DAYS for who, text in day if who == "Sam"]
    assert sorted(replies) == sorted(sam)  # each reply trained once, day 1 (export only) and day 4 (database only)
    for row in examples:  # and no line twice in any context
        lines = [line for turn in row["turns"] for line in turn["text"].split("\n")]
        assert len(lines) == len(set(lines))

    # the export deleted: the database's part is read again, not reused with the export's evening merged in
    from flows.pipeline import pipeline_flow

    (inbox / "priya_export.txt").unlink()
    again = pipeline_flow(config=str(tmp_path / "persona.yaml"), only=["ingest"])["ingest"]
    texts = [row["text"] for part in sorted(Path(again).glob("part-*.parquet")) for row in pq.read_table(part).to_pylist()]
    assert len(texts) == 3 and not any(text in "\n".join(texts) for _who, text in DAYS[0])
    assert "merged_chats" not in read_manifest(again).stats


def test_messenger_and_discord_exports_go_through_to_sft_data(tmp_path, prefect_harness):
    from tests.tasks.test_discord import _message
    from tests.tasks.test_messenger import msg, thread, write

    inbox = tmp_path / "inbox"
    chat = inbox / "messages" / "inbox" / "priya_1"
    lines = [(day * 600 + 3 * i, "Sam" if i % 2 else "Priya", text) for day in range(4) for i, text in enumerate(LINES)]
    # Meta writes a chat newest first in parts of at most 10,000; two parts here, each UTF-8 byte escaped
    parts = [[msg(who, minute, text) for minute, who, text in lines[half::2]] for half in (0, 1)]
    write(chat, thread(parts[0], title="Priya", participants=("Priya", "Sam")), "message_1.json")
    write(chat, thread(parts[1], title="Priya", participants=("Priya", "Sam")), "message_2.json")
    (chat / "photos").mkdir()
    (chat / "photos" / "1.jpg").write_bytes(b"\xff\xd8\xff\xe0")
    kim, sam = ({"id": str(n), "name": name.lower(), "discriminator": "0", "nickname": name, "isBot": False}
                for n, name in ((1, "Kim"), (2, "Sam")))
    discord = [_message(str(i + 1), sam if i % 2 else kim, text, ts=f"2025-03-0{1 + day}T20:{3 * i:02d}:00+00:00")
               for day in range(4) for i, text in enumerate(LINES)]
    (inbox / "discord.json").write_text(json.dumps({
        "guild": {"id": "0", "name": "Direct Messages"},
        "channel": {"id": "7", "type": "DirectTextChat", "category": "Private", "name": "Kim", "topic": None},
        "dateRange": {"after": None, "before": None}, "messages": discord}), encoding="utf-8")
    out = _ingest_to_sft_data(tmp_path, inbox)
    ingest = read_manifest(out["ingest"])
    assert ingest.counts["files_in"] == 2 and ingest.counts["messages"] == 2 * 4 * len(LINES)
    messages = list(iter_rows(parquet_files(ingest.path, "messages")))
    assert {m["author"] for m in messages} == {"Sam", "Priya", "Kim"}
    assert {r["source"] for r in iter_rows(parquet_files(ingest.path))} == {"messenger", "discord"}
    sft = read_manifest(out["sft-data"])
    assert sft.stats["target_author"] == "Sam" and sft.counts["out"] > 0
    replies = {row["turns"][-1]["text"] for row in _examples(sft.path)}
    assert replies == {text for i, text in enumerate(LINES) if i % 2}  # Sam's lines from both, as Assistant
