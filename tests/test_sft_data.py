"""The sft-data stage on the example chats: Sam becomes the Assistant, examples fit the block, sessions do not
straddle train and val, and a wrong name lists who is in the chats."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from model.sft import encode_example
from tasks.sft_data import SFT_SCHEMA, build_sft_examples
from tasks.tokenizer import load_tokenizer
from tasks.training import SftDataParams
from tests.test_train_support import BLOCK, tiny_world


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
