"""The sft-data stage on the example chats: Sam becomes the Assistant, examples fit the block, sessions do not
straddle train and val, and a wrong name lists who is in the chats."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from storage.chat_format import encode_example, load_tokenizer
from tasks.sft_data import SFT_SCHEMA, build_sft_examples
from tasks.training import SftDataParams
from tests.support import BLOCK, tiny_world


def _rows(path):
    return pq.read_table(path).to_pylist()


def test_sam_becomes_the_assistant_and_every_example_ends_with_a_reply():
    w = tiny_world()
    result = w.sft
    assert result.target_author == "Sam"
    assert result.authors["Sam"] == 85 and result.authors["Priya"] == 35
    assert result.examples["train"] > 40 and result.examples["val"] >= 1
    # every media / deleted / system / poll message of the four exports is counted, none is used
    assert result.dropped == {"deleted": 4, "media": 10, "poll": 1, "system": 12}
    assert result.messages_used == result.messages_in - sum(result.dropped.values())
    assert pq.read_schema(result.train_path).equals(SFT_SCHEMA)

    tok = load_tokenizer(w.tokenizer)
    rows = _rows(result.train_path) + _rows(result.val_path)
    for row in rows:
        roles = [t["role"] for t in row["turns"]]
        assert roles[-1] == "Assistant" and "User" in roles
        assert all(a != b for a, b in zip(roles, roles[1:], strict=False))  # merged: turns alternate
        ids, _ = encode_example(tok, row["turns"])
        assert len(ids) == row["n_tokens"] <= BLOCK
        assert row["text"].startswith("<|startoftext|>") and row["text"].endswith("<|endoftext|>")
        assert all("omitted" not in t["text"].lower() and "deleted" not in t["text"].lower() for t in row["turns"])
    assert len({r["example_id"] for r in rows}) == len(rows)

    # Priya asks, Sam answers with his two consecutive messages merged
    first = next(r for r in rows if r["turns"][0]["text"] == "Hey Sam! Are we still on for Saturday?")
    assert first["turns"][:2] == [
        {"role": "User", "text": "Hey Sam! Are we still on for Saturday?"},
        {"role": "Assistant", "text": "Hey! Yes, definitely 🙂\nI was thinking the lake trail this time, "
                                      "the one past the old mill"},
    ]


def test_train_and_val_are_split_by_session():
    w = tiny_world()
    train = {(r["chat_id"], r["session"]) for r in _rows(w.sft.train_path)}
    val = {(r["chat_id"], r["session"]) for r in _rows(w.sft.val_path)}
    assert train and val and not train & val
    assert w.sft.sessions == {"train": len(train), "val": len(val)}


def test_examples_take_as_much_context_as_fits(tmp_path):
    w = tiny_world()
    few = build_sft_examples(w.messages, str(w.tokenizer),
                             SftDataParams(target_author="Sam", block_size=BLOCK, max_context_turns=1), str(tmp_path))
    rows = _rows(few.train_path)
    assert all(len(r["turns"]) == 2 for r in rows)
    wide = _rows(w.sft.train_path)
    assert max(len(r["turns"]) for r in wide) > 2


def test_target_is_matched_case_insensitively_and_trimmed(tmp_path):
    w = tiny_world()
    result = build_sft_examples(w.messages, str(w.tokenizer),
                                SftDataParams(target_author="  sAm ", block_size=BLOCK), str(tmp_path))
    assert result.target_author == "Sam" and result.examples == w.sft.examples


def test_an_unknown_author_lists_the_authors_found(tmp_path):
    w = tiny_world()
    with pytest.raises(ValueError, match=r"no messages by 'Samantha'.*'Sam' \(85\), 'Priya' \(35\)"):
        build_sft_examples(w.messages, str(w.tokenizer), SftDataParams(target_author="Samantha"), str(tmp_path))
    with pytest.raises(ValueError, match="set target_author"):
        build_sft_examples(w.messages, str(w.tokenizer), SftDataParams(), str(tmp_path))


def test_no_example_at_all_is_a_clear_error(tmp_path):
    w = tiny_world()
    with pytest.raises(ValueError, match=r"no example could be built \(empty SFT set\).*block_size=8"):
        build_sft_examples(w.messages, str(w.tokenizer), SftDataParams(target_author="Sam", block_size=8),
                           str(tmp_path / "out"))
    assert not (tmp_path / "out" / "train.parquet").exists()


def _messages_part(tmp_path, name: str, text: str) -> str:
    from storage.parquet import ParquetShardWriter
    from storage.schemas import MESSAGE_SCHEMA
    from tasks.whatsapp.parser import parse_whatsapp_export

    export = tmp_path / name
    export.write_text(text, encoding="utf-8")
    part = tmp_path / "messages" / f"{name}.parquet"
    with ParquetShardWriter(part, MESSAGE_SCHEMA) as w:
        w.write_rows(parse_whatsapp_export(export).as_rows())
    return str(part)


def test_a_chat_exported_again_later_is_one_conversation(tmp_path):
    from tests.support import EXAMPLES

    w = tiny_world()
    original = (EXAMPLES / "sam_priya_android_en_24h.txt").read_text(encoding="utf-8")
    later = original + (
        "20/03/2024, 09:00 - Priya: Morning! Coffee before work?\n"
        "20/03/2024, 09:02 - Sam: Always. The usual place in ten minutes\n"
    )
    once = build_sft_examples([_messages_part(tmp_path, "a.txt", original)], str(w.tokenizer),
                              SftDataParams(target_author="Sam", block_size=BLOCK, val_fraction=0), str(tmp_path / "1"))
    twice = build_sft_examples([_messages_part(tmp_path, "b.txt", original), _messages_part(tmp_path, "c.txt", later)],
                               str(w.tokenizer), SftDataParams(target_author="Sam", block_size=BLOCK, val_fraction=0),
                               str(tmp_path / "2"))
    assert twice.exports_merged == 1 and twice.chats == 1
    assert twice.messages_used == once.messages_used + 2  # the old messages once, the two new ones added
    texts = [t["text"] for r in _rows(twice.train_path) for t in r["turns"]]
    assert "Always. The usual place in ten minutes" in texts
    assert len(_rows(twice.train_path)) == len(_rows(once.train_path)) + 1

    other = build_sft_examples(w.messages, str(w.tokenizer), SftDataParams(target_author="Sam", block_size=BLOCK),
                               str(tmp_path / "3"))
    assert other.exports_merged == 0 and other.chats == 4  # different chats are never merged


def test_messages_are_cleaned_like_the_corpus(tmp_path):
    from tasks.cleaning import CleanRules

    w = tiny_world()
    chat = (
        "01/05/2024, 10:00 - Priya: Sam, the form is at https://forms.example.org/x?id=3 can you fill it\n"
        "01/05/2024, 10:01 - Sam: Sure, and mail it to jo@example.com? Or call +44 7700 900123\n"
        "01/05/2024, 10:02 - Priya: https://example.org/only-a-link\n"
        "01/05/2024, 10:03 - Sam: ok done\n"
    )
    part = _messages_part(tmp_path, "chat.txt", chat)
    params = SftDataParams(target_author="Sam", block_size=BLOCK, val_fraction=0)
    cleaned = build_sft_examples([part], str(w.tokenizer), params, str(tmp_path / "c"), clean_rules=CleanRules())
    raw = build_sft_examples([part], str(w.tokenizer), params, str(tmp_path / "r"))
    cleaned_text = " ".join(t["text"] for r in _rows(cleaned.train_path) for t in r["turns"])
    assert "https://" not in cleaned_text and "jo@example.com" not in cleaned_text and "7700" not in cleaned_text
    assert "can you fill it" in cleaned_text and cleaned.dropped == {"empty_after_clean": 1}
    assert "https://forms.example.org" in " ".join(t["text"] for r in _rows(raw.train_path) for t in r["turns"])


def test_a_chat_exported_and_in_the_phones_database_is_trained_once(tmp_path):
    from storage.parquet import ParquetShardWriter
    from storage.schemas import MESSAGE_SCHEMA
    from tests.tasks.test_chat_merge import _sources

    export, database = _sources(tmp_path)  # the same chat: a .txt export (Paris time) and msgstore.db (read as UTC)
    parts = []
    for name, chats in (("export", [export]), ("database", database)):
        parts.append(str(tmp_path / "messages" / f"{name}.parquet"))
        with ParquetShardWriter(parts[-1], MESSAGE_SCHEMA) as w:
            w.write_rows([row for chat in chats for row in chat.as_rows()])
    result = build_sft_examples(parts, str(tiny_world().tokenizer),
                                SftDataParams(target_author="Sam Lee", block_size=BLOCK, val_fraction=0),
                                str(tmp_path / "out"))
    assert result.exports_merged == 1 and result.chats == 2  # the database's group chat stays apart
    [merged] = result.merged_chats
    assert merged["chat_id"] == database[0].chat_id and merged["offset_seconds"] == 3600
    assert merged["shared_messages"] == result.dropped["duplicate"] == 6
    assert {c["source_file"] for c in merged["copies"]} == {"msgstore.db", "WhatsApp Chat with Sam Lee.txt"}
    assert result.stats()["merged_chats"] == result.merged_chats and result.counts()["dropped_duplicate"] == 6
    assert result.messages_used == result.messages_in - sum(result.dropped.values())
    turns = [t["text"] for r in _rows(result.train_path) for t in r["turns"]]
    assert turns.count("Trail closed north of the lake.") == 1


def test_one_message_with_a_wrong_clock_does_not_split_its_conversation(tmp_path):
    w = tiny_world()
    export = (
        "01/05/2024, 10:00 - Priya: Are you coming tonight?\n"
        "01/05/2024, 10:01 - Sam: Yes, around eight\n"
        "01/05/2024, 03:00 - Priya: Should I bring snacks?\n"  # her phone's clock was seven hours behind
        "01/05/2024, 10:03 - Sam: Bring the good chips\n"
    )
    result = build_sft_examples([_messages_part(tmp_path, "a.txt", export)], str(w.tokenizer),
                                SftDataParams(target_author="Sam", block_size=BLOCK, val_fraction=0),
                                str(tmp_path / "out"))
    assert result.clock_outliers == 1 and result.counts()["clock_outliers"] == 1
    rows = _rows(result.train_path)
    assert len(rows) == 2 and {r["session"] for r in rows} == {0}
    assert [t["text"] for t in rows[-1]["turns"]][-2:] == ["Should I bring snacks?", "Bring the good chips"]
    assert not result.skipped_turns.get("opens_session")
