"""The sft-data stage on messy chats written here: big groups, the target under several spellings or as a phone
database's "me", a target with no text, bursts, huge messages, odd timestamps, replies to missing messages, system
lines and polls. Only the target's own text is ever an Assistant turn; what cannot be built is a one-line error."""

from __future__ import annotations

import logging
from datetime import datetime

import pyarrow.parquet as pq
import pytest

from storage.parquet import ParquetShardWriter
from storage.schemas import MESSAGE_SCHEMA
from tasks.sft_data import build_sft_examples
from tasks.training import SftDataParams
from tasks.whatsapp.parser import parse_whatsapp_export
from tests.support import BLOCK, tiny_world


def _export(tmp_path, name: str, text: str) -> str:
    """A `.txt` export parsed by the real parser, written as a messages part."""
    export = tmp_path / name
    export.write_text(text, encoding="utf-8")
    return _part(tmp_path, name, parse_whatsapp_export(export).as_rows())


def _part(tmp_path, name: str, rows: list[dict]) -> str:
    part = tmp_path / "messages" / f"{name}.parquet"
    with ParquetShardWriter(part, MESSAGE_SCHEMA) as w:
        w.write_rows(rows)
    return str(part)


def _build(tmp_path, parts: list[str], target: str = "Sam", **params):
    params = {"block_size": BLOCK, "val_fraction": 0, **params}
    return build_sft_examples(parts, str(tiny_world().tokenizer), SftDataParams(target_author=target, **params),
                              str(tmp_path / "out"))


def _turns(result) -> list[tuple[str, str]]:
    return [(t["role"], t["text"]) for split in (result.train_path, result.val_path)
            for row in pq.read_table(split).to_pylist() for t in row["turns"]]


def _assistant_lines(result) -> set[str]:
    return {line for role, text in _turns(result) if role == "Assistant" for line in text.split("\n")}


# ------------------------------------------------------------------------------------------ already handled


def test_a_group_of_twelve_trains_only_the_targets_lines(tmp_path):
    names = ["Sam", "Priya", "Lee", "Ana", "Bo", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal", "Samira"]
    lines = [f"01/05/2024, 10:{i:02d} - {names[i % 12]}: hi {i}" for i in range(36)]
    result = _build(tmp_path, [_export(tmp_path, "group.txt", "\n".join(lines) + "\n")])
    assert result.authors["Samira"] == 3 and result.target_author == "Sam"
    # "hi 0" opens the chat: it ends no example, but is trained inside the context of later ones (DESIGN)
    assert _assistant_lines(result) == {"hi 0", "hi 12", "hi 24"} and result.skipped_turns == {"opens_session": 1}
    users = {line for role, text in _turns(result) if role == "User" for line in text.split("\n")}
    assert "hi 11" in users and "hi 23" in users and not users & {"hi 0", "hi 12", "hi 24"}


def test_bursts_system_lines_and_polls_inside_a_conversation(tmp_path):
    chat = (
        "01/05/2024, 10:00 - Priya: where do we meet\n"
        "01/05/2024, 10:01 - Priya added Lee\n"
        "01/05/2024, 10:02 - Sam: welcome Lee\n"
        "01/05/2024, 10:02 - Sam: <Media omitted>\n"
        "01/05/2024, 10:02 - Sam: This message was deleted\n"
        "01/05/2024, 10:03 - Priya: POLL:\nWhere?\nOPTION: Lake (1 vote)\nOPTION: Hill (0 votes)\n"
        "01/05/2024, 10:04 - Sam: the lake\n"
        "01/05/2024, 10:05 - Priya: Saturday then\n"
        "01/05/2024, 10:06 - Sam changed the subject to \"Hike\"\n"
        "01/05/2024, 10:07 - Sam: ok\n"
    )
    result = _build(tmp_path, [_export(tmp_path, "chat.txt", chat)])
    assert result.dropped == {"deleted": 1, "media": 1, "poll": 1, "system": 2}
    # one burst, newline-joined, the dropped messages between its lines gone (DESIGN: turns alternate)
    assert ("Assistant", "welcome Lee\nthe lake") in _turns(result)
    text = " ".join(t for _, t in _turns(result))
    assert "omitted" not in text and "deleted" not in text and "POLL" not in text and "subject" not in text


def test_a_message_longer_than_the_block_is_counted_not_trained(tmp_path):
    big = " ".join(["word"] * 10_000)  # 50,000 characters
    chat = (f"01/05/2024, 10:00 - Priya: hi\n01/05/2024, 10:01 - Sam: {big}\n01/05/2024, 10:02 - Priya: wow\n"
            f"01/05/2024, 10:03 - Sam: yes\n01/05/2024, 10:04 - Priya: {big}\n01/05/2024, 10:05 - Sam: short\n")
    result = _build(tmp_path, [_export(tmp_path, "chat.txt", chat)])
    assert result.skipped_turns == {"longer_than_block": 1, "no_context_fits": 1}
    assert _turns(result) == [("User", "wow"), ("Assistant", "yes")]


def test_equal_and_backward_timestamps_and_replies_to_missing_messages(tmp_path):
    def row(i, hour, minute, author, text, reply_to=None):
        return {"chat_id": "c1", "index": i, "timestamp": datetime(2024, 5, 1, hour, minute), "author": author,
                "text": text, "kind": "text", "source_file": "msgstore.db", "reply_to": reply_to}

    rows = [row(0, 10, 0, "Priya", "hi"), row(1, 10, 0, "Sam", "same minute", "#ZZ99"),
            row(2, 9, 0, "Priya", "an hour back", "57"), row(3, 10, 5, "Sam", "after", "2")]
    result = _build(tmp_path, [_part(tmp_path, "db", rows)])
    assert _assistant_lines(result) == {"same minute", "after"} and result.messages_used == 4


# ------------------------------------------------------------------------------------------ fixed here


def test_a_phone_number_target_matches_however_it_is_spaced(tmp_path):
    chat = ("01/05/2024, 10:00 - \u202a+33 6 12 34 56 78\u202c: salut\n01/05/2024, 10:01 - Sam: hello\n"
            "01/05/2024, 10:02 - \u202a+33 6 12 34 56 78\u202c: ca va\n")
    result = _build(tmp_path, [_export(tmp_path, "chat.txt", chat)], target="+33612345678")
    assert result.target_author == "+33 6 12 34 56 78"
    assert _assistant_lines(result) == {"salut", "ca va"} and ("User", "hello") in _turns(result)


def test_other_spellings_of_the_target_are_reported_not_trained(tmp_path, caplog):
    chat = (
        "01/05/2024, 10:00 - Priya: one\n01/05/2024, 10:01 - Sam: hello one\n"
        "01/05/2024, 10:02 - Priya: two\n01/05/2024, 10:03 - sam : fine two\n"
        "01/05/2024, 10:04 - Priya: three\n01/05/2024, 10:05 - Sam 🇫🇷: flag three\n"
        "01/05/2024, 10:06 - Priya: four\n01/05/2024, 10:07 - \u2068Sam\u2069: isolate four\n"
        "01/05/2024, 10:08 - Samira: five\n01/05/2024, 10:09 - \u200eSam\u200e: mark five\n"
    )
    with caplog.at_level(logging.WARNING, logger="tasks.sft_data"):
        result = _build(tmp_path, [_export(tmp_path, "chat.txt", chat)], target="\u2068sam ")
    # case, spaces and direction marks are one name; a flag makes another contact name, maybe another person
    assert _assistant_lines(result) == {"hello one", "fine two", "isolate four", "mark five"}
    assert result.unmatched_spellings == {"Sam 🇫🇷": 1} and result.stats()["unmatched_spellings"] == {"Sam 🇫🇷": 1}
    assert "'Sam 🇫🇷' (1) may be 'Sam' too" in caplog.text and "list every name" in caplog.text
    # named too, in a list, they are the person
    both = _build(tmp_path, [_export(tmp_path, "chat.txt", chat)], target=["Sam", "Sam 🇫🇷"])
    assert _assistant_lines(both) == {"hello one", "fine two", "flag three", "isolate four", "mark five"}
    assert both.unmatched_spellings == {} and both.target_author == "Sam"


def test_a_phone_databases_owner_left_as_me_is_reported(tmp_path, caplog):
    from tests.tasks.test_chat_merge import _sources

    export, database = _sources(tmp_path)  # the export names the owner "Priya"; the database says "me"
    parts = [_part(tmp_path, "export", export.as_rows()),
             _part(tmp_path, "database", [row for chat in database for row in chat.as_rows()])]
    with caplog.at_level(logging.WARNING, logger="tasks.sft_data"):
        result = _build(tmp_path, parts, target="Priya")
    # the chat both hold is merged under the export's names; the group only the database holds keeps "me"
    assert result.exports_merged == 1 and result.authors["me"] == 1
    assert "the 6th for me" not in _assistant_lines(result)
    assert result.unmatched_spellings == {"me": 1} and "ingest.database_owner" in caplog.text


def test_a_target_with_only_media_and_deleted_messages_is_a_clear_error(tmp_path):
    chat = ("01/05/2024, 10:00 - Priya: hi there\n01/05/2024, 10:01 - Sam: <Media omitted>\n"
            "01/05/2024, 10:02 - Priya: how are you\n01/05/2024, 10:03 - Sam: This message was deleted\n")
    part = _export(tmp_path, "WhatsApp Chat with Priya.txt", chat)
    with pytest.raises(ValueError, match=r"^sft-data: 'Sam' has no text message to train on: their 2 messages in "
                                         r"WhatsApp Chat with Priya\.txt are all dropped \(media 1, deleted 1\)$"):
        _build(tmp_path, [part])


def test_a_target_who_never_answers_names_the_chat(tmp_path):
    chat = ("01/05/2024, 10:00 - Sam: anyone up?\n02/05/2024, 10:00 - Sam: hello?\n"
            "03/05/2024, 10:00 - Sam: ping\n03/05/2024, 10:01 - Priya: hi\n")
    with pytest.raises(ValueError, match=r"no example could be built.*3 by 'Sam' in lonely\.txt.*'opens_session': 3"):
        _build(tmp_path, [_export(tmp_path, "lonely.txt", chat)])


def test_only_system_lines_or_no_message_at_all_say_so(tmp_path):
    chat = ('01/05/2024, 10:00 - Priya created group "Hike"\n01/05/2024, 10:01 - Priya added Sam\n')
    with pytest.raises(ValueError, match=r"the 2 messages read are all system lines \(no author\), in "
                                         r"WhatsApp Chat with Hike\.txt"):
        _build(tmp_path, [_export(tmp_path, "WhatsApp Chat with Hike.txt", chat)])
    with pytest.raises(ValueError, match=r"^sft-data: the messages dataset is empty"):
        _build(tmp_path, [_part(tmp_path, "empty", [])])


def test_a_reply_after_a_burst_too_long_for_the_block_keeps_the_bursts_last_messages(tmp_path):
    names = ["Priya", "Lee", "Ana", "Bo", "Cy", "Dee"]
    burst = [f"01/05/2024, 10:{i:02d} - {names[i % 6]}: message number {i} about the trip" for i in range(50)]
    chat = "\n".join([*burst, "01/05/2024, 10:55 - Sam: count me in"]) + "\n"
    result = _build(tmp_path, [_export(tmp_path, "group.txt", chat)])
    # before: the reply was skipped (no_context_fits) as the 50 messages before it do not fit in the block
    assert result.skipped_turns == {} and result.context_cut == 1
    (row,) = pq.read_table(result.train_path).to_pylist()
    (user, assistant) = row["turns"]
    assert assistant == {"role": "Assistant", "text": "count me in"} and row["n_tokens"] <= BLOCK
    kept = user["text"].split("\n")
    # the most recent messages, whole: a suffix of the burst, as many as fit
    assert kept == [f"message number {i} about the trip" for i in range(50 - len(kept), 50)] and 1 <= len(kept) < 50


@pytest.mark.parametrize("target, names", [("Sam", ["Sam"]), ("  ", []), (None, []), ([], []),
                                           (["Sam", " ", "Sam 🇫🇷"], ["Sam", "Sam 🇫🇷"])])
def test_target_author_is_one_name_or_a_list(target, names):
    # blank names name nobody: the chat stages stay off until one is given (flows.plans.chat_stages_active)
    assert SftDataParams(target_author=target).target_names() == names
