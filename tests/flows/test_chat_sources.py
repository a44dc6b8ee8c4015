"""Chat sources beyond WhatsApp's .txt export, through the pipeline to sft-data: a Telegram Desktop JSON export and
an Android WhatsApp database, detected by content, read into the messages dataset (with replies) and documents,
and turned into SFT examples of the person with the owner's name set for the database; and one chat given both as
a `.txt` export and as the phone's database, trained once; and a Messenger download Meta delivered as two zips, read
as the folder it unzips to."""

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


# Priya and Sam one evening on Messenger, oldest first, four minutes apart. Meta wrote the conversation in two parts,
# message_1.json the newer half (from Sam's answer on) and message_2.json the older one, and put them in different
# zips of one download: the cut falls between Priya's question and Sam's answer to it.
EVENING = [("Priya", "are you still at the office?"), ("Sam", "leaving in ten"),
           ("Priya", "want to grab dinner on the way?"), ("Sam", "sure, where?"),
           ("Priya", "the new ramen place? 🍜"), ("Sam", "yes! meet you there at eight"),
           ("Priya", "I booked a table"), ("Sam", "perfect, see you soon")]
CUT = 5  # message_2.json holds EVENING[:CUT], ending with Priya's question; message_1.json the rest
PRIYA = "messages/inbox/priya_1024"
KIM = "messages/inbox/kim_2048/message_1.json"


def test_a_messenger_download_split_over_two_zips_reads_as_one_folder(tmp_path, prefect_harness):
    import zipfile
    from operator import itemgetter

    unzipped = _messenger_download(tmp_path / "facebook-sam")
    zips = tmp_path / "downloads"
    zips.mkdir()
    for name, members in (("facebook-sam.zip", [f"{PRIYA}/message_1.json", KIM]),
                          ("facebook-sam (1).zip", [f"{PRIYA}/message_2.json"])):
        with zipfile.ZipFile(zips / name, "w", zipfile.ZIP_DEFLATED) as archive:
            for member in members:
                archive.write(unzipped / member, member)
    runs = {}
    for name, inbox in (("zips", zips), ("folder", unzipped)):
        (tmp_path / name).mkdir()
        runs[name] = _ingest_to_sft_data(tmp_path / name, inbox)

    ingest = read_manifest(runs["zips"]["ingest"])
    assert ingest.counts["files_in"] == 2 and ingest.counts["messages"] == len(EVENING) + 2
    messages = list(iter_rows(parquet_files(ingest.path, "messages")))
    # one chat for Priya's conversation, each of its messages once, in order
    chat_ids = {m["chat_id"] for m in messages if m["author"] == "Priya"}
    assert len(chat_ids) == 1
    [chat_id] = chat_ids
    evening = sorted((m for m in messages if m["chat_id"] == chat_id), key=lambda m: m["index"])
    assert [(m["author"], m["text"]) for m in evening] == EVENING
    assert [m["index"] for m in evening] == list(range(len(EVENING)))
    assert evening[CUT]["timestamp"] - evening[CUT - 1]["timestamp"] == timedelta(minutes=4)

    # each of Sam's answers is trained once, the one across the cut with Priya's question before it (two chats
    # would lose it: the answer would open the newer half, with nothing to answer)
    examples = _examples(read_manifest(runs["zips"]["sft-data"]).path)
    replies = [row["turns"][-1]["text"] for row in examples if row["chat_id"] == chat_id]
    assert sorted(replies) == sorted(text for author, text in EVENING if author == "Sam")
    [across] = [row["turns"] for row in examples if row["turns"][-1]["text"] == EVENING[CUT][1]]
    assert across[-2:] == [{"role": "User", "text": EVENING[CUT - 1][1]},
                           {"role": "Assistant", "text": EVENING[CUT][1]}]

    # the download unzipped into one folder: the same message rows (chat ids, indexes, texts, times) and examples
    unzipped_messages = list(iter_rows(parquet_files(read_manifest(runs["folder"]["ingest"]).path, "messages")))
    by_position, by_id = itemgetter("chat_id", "index"), itemgetter("example_id")
    assert sorted(messages, key=by_position) == sorted(unzipped_messages, key=by_position)
    unzipped_examples = _examples(read_manifest(runs["folder"]["sft-data"]).path)
    assert sorted(examples, key=by_id) == sorted(unzipped_examples, key=by_id)


def _messenger_download(root: Path) -> Path:
    """A Messenger "Download Your Information" unzipped at `root`: Priya's conversation (EVENING from 2025-04-10
    19:00 UTC) in its two parts, newest first as Meta writes them, and a short one with Kim; text as Meta encodes
    it, each UTF-8 byte as its own code point."""
    def meta(text: str) -> str:
        return text.encode("utf-8").decode("latin-1")

    def conversation(folder: str, who: str, lines: list[tuple[int, str, str]]) -> dict:
        start = int(datetime(2025, 4, 10, 19, 0, tzinfo=timezone.utc).timestamp() * 1000)
        return {"participants": [{"name": who}, {"name": "Sam"}],
                "messages": [{"sender_name": author, "timestamp_ms": start + minute * 60_000, "content": meta(text),
                              "is_geoblocked_for_viewer": False} for minute, author, text in reversed(lines)],
                "title": who, "is_still_participant": True, "thread_type": "Regular",
                "thread_path": folder.removeprefix("messages/"), "magic_words": []}

    lines = [(4 * i, author, text) for i, (author, text) in enumerate(EVENING)]
    for name, part in (("message_1.json", lines[CUT:]), ("message_2.json", lines[:CUT])):
        (root / PRIYA).mkdir(parents=True, exist_ok=True)
        (root / PRIYA / name).write_text(json.dumps(conversation(PRIYA, "Priya", part)), encoding="utf-8")
    (root / KIM).parent.mkdir(parents=True)
    (root / KIM).write_text(json.dumps(conversation(str(Path(KIM).parent), "Kim", [
        (60, "Kim", "did you get my parcel?"), (61, "Sam", "yes, thank you!")])), encoding="utf-8")
    return root
