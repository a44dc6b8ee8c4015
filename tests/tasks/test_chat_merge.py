"""Copies of one chat from several sources (a .txt export and the phone's database) merged without duplicates."""

from __future__ import annotations

import json
from datetime import datetime

from tasks.chat_merge import merge_chats, normalize_author
from tasks.whatsapp import chat_to_documents, parse_whatsapp_export
from tasks.whatsapp.database import read_whatsapp_database
from tests.tasks.whatsapp.test_database import _android_db

# What the phone's own "Export chat" wrote for the chat `_android_db` holds as chat 1, in Paris time (UTC+1 in
# March) while the database is read as UTC: minutes only, contact names, "<Media omitted>", one older message
# the database no longer has.
EXPORT = """\
14/03/2024, 19:00 - Sam Lee: Did you see the forecast?
14/03/2024, 19:02 - Sam Lee: Hey, are you free on Saturday?
14/03/2024, 19:03 - Priya: Yes! Where do we meet?
14/03/2024, 19:04 - Sam Lee: <Media omitted>
14/03/2024, 19:05 - Sam Lee: Trail closed north of the lake.
14/03/2024, 19:06 - Priya: You deleted this message
14/03/2024, 19:07 - Sam Lee: <Media omitted>
"""


def _sources(tmp_path):
    txt = tmp_path / "WhatsApp Chat with Sam Lee.txt"
    txt.write_text(EXPORT, encoding="utf-8")
    export = parse_whatsapp_export(txt)
    database = read_whatsapp_database(_android_db(tmp_path / "msgstore.db"))
    return export, database


def test_export_and_database_of_one_chat_merge_into_one(tmp_path):
    export, (sam, group) = _sources(tmp_path)
    merged = merge_chats([export, sam, group])
    assert len(merged) == 2 and merged[1] is group
    chat = merged[0]
    assert chat.chat_id == sam.chat_id and chat.source_file == "msgstore.db"
    assert [(m.author, m.kind, m.text) for m in chat.messages] == [
        ("Sam Lee", "text", "Did you see the forecast?"),  # only in the export
        ("Sam Lee", "text", "Hey, are you free on Saturday?"),
        ("Priya", "text", "Yes! Where do we meet?"),
        ("Sam Lee", "media", "image omitted\nthe trail map"),
        ("Sam Lee", "text", "Trail closed north of the lake."),
        ("Priya", "deleted", "You deleted this message"),
        ("Sam Lee", "media", "sticker omitted"),
    ]
    # the database's exact times, moved into the export's local time by the offset found (+1 h)
    assert [m.timestamp for m in chat.messages[:3]] == [
        datetime(2024, 3, 14, 19, 0), datetime(2024, 3, 14, 19, 2, 5), datetime(2024, 3, 14, 19, 3, 10)
    ]
    assert chat.messages[2].reply_to == "1"  # re-pointed to the merged index of "Hey, are you free…"
    assert [m.index for m in chat.messages] == list(range(7))
    assert chat.stats["merged_offset_seconds"] == 3600 and chat.stats["merged_shared_messages"] == 6
    assert chat.stats["forwarded_indexes"] == [4] and chat.stats["authors"] == {"Sam Lee": 5, "Priya": 2}
    assert {s["source_file"] for s in chat.stats["merged_from"]} == {"msgstore.db", "WhatsApp Chat with Sam Lee.txt"}
    [doc] = chat_to_documents(chat)
    assert doc.text.count("Hey, are you free on Saturday?") == 1


def test_order_of_the_copies_does_not_change_the_result(tmp_path):
    export, (sam, _) = _sources(tmp_path)
    one, two = merge_chats([export, sam]), merge_chats([sam, export])
    assert [m.as_row() for m in one[0].messages] == [m.as_row() for m in two[0].messages]


def test_the_same_export_twice_is_one_chat(tmp_path):
    export, _ = _sources(tmp_path)
    again = parse_whatsapp_export(tmp_path / "WhatsApp Chat with Sam Lee.txt")
    [chat] = merge_chats([export, again])
    assert len(chat.messages) == len(export.messages)


def test_chats_that_only_share_a_few_words_stay_apart(tmp_path):
    other = tmp_path / "WhatsApp Chat with Kim.txt"
    other.write_text(
        "14/03/2024, 19:02 - Kim: Hey, are you free on Saturday?\n"
        "14/03/2024, 19:03 - Priya: No, sorry\n"
        "14/03/2024, 19:10 - Kim: ok\n"
        "14/03/2024, 19:11 - Kim: next week then\n"
        "14/03/2024, 19:12 - Priya: sure\n",
        encoding="utf-8",
    )
    export, (sam, group) = _sources(tmp_path)
    kim = parse_whatsapp_export(other)
    merged = merge_chats([kim, sam, group])
    assert [c.chat_id for c in merged] == [kim.chat_id, sam.chat_id, group.chat_id]


def test_authors_compare_by_phone_digits_or_folded_names():
    assert normalize_author("+44 7700 900123") == normalize_author("447700900123") == "447700900123"
    assert normalize_author(" Sam Lee\u200e") == normalize_author("sam lee")
    assert normalize_author(None) is None


def test_ingest_keeps_one_copy_of_a_chat_in_the_documents(tmp_path):
    """An export and the database of one chat, ingested file by file: the copies' documents give way to the merged
    chat's, written into the database's part; the database's other chat (a group) and the messages parts are left
    as they were, and a second pass changes nothing."""
    import pyarrow.parquet as pq

    from tasks.ingest import ingest_file, merge_chat_copies, resolve_inputs
    from tasks.params import IngestParams

    export, (sam, group) = _sources(tmp_path)
    params = IngestParams(inputs=[{"path": export.path}, {"path": str(tmp_path / "msgstore.db")}])
    files = resolve_inputs(params)
    docs = [str(tmp_path / f"part-{i}.parquet") for i in range(len(files))]
    messages = [str(tmp_path / "messages" / f"part-{i}.parquet") for i in range(len(files))]
    for f, doc_part, message_part in zip(files, docs, messages, strict=True):
        ingest_file(f, doc_part, message_part, params)
    before_messages = [pq.read_table(p) for p in messages]
    db_part = docs[[f.kind for f in files].index("whatsapp-db")]

    def sessions(part: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for row in pq.read_table(part).to_pylist():
            out.setdefault(json.loads(row["meta"])["chat_id"], []).append(row["text"])
        return out

    group_docs = sessions(db_part)[group.chat_id]
    copies = merge_chat_copies(docs, messages, [f.source for f in files], params)
    assert sorted(copies.rewritten) == [0, 1] and [m["chat_id"] for m in copies.merged] == [sam.chat_id]
    [merged] = merge_chats([export, sam])
    expected = chat_to_documents(merged)
    assert copies.merged[0]["documents"] == len(expected)
    everything = [sessions(p) for p in docs]
    assert [chat for part in everything for chat in part].count(sam.chat_id) == 1
    assert export.chat_id not in {chat for part in everything for chat in part}
    assert sessions(db_part) == {group.chat_id: group_docs, sam.chat_id: [d.text for d in expected]}
    assert [pq.read_table(p) for p in messages] == before_messages  # every copy as read

    tables = [pq.read_table(p) for p in docs]
    again = merge_chat_copies(docs, messages, [f.source for f in files], params)
    assert again.merged == copies.merged and [pq.read_table(p) for p in docs] == tables


def test_a_single_chat_input_is_left_alone(tmp_path):
    from tasks.ingest import merge_chat_copies
    from tasks.params import IngestParams

    assert merge_chat_copies([str(tmp_path / "part-0.parquet")], [str(tmp_path / "missing.parquet")], ["whatsapp"],
                             IngestParams(inputs=[{"path": str(tmp_path)}])).merged == []
