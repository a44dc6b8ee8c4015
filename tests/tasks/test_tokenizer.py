"""The tokenizer stage as plain functions: a byte-level BPE trained on real multilingual chat and web text, whose
special tokens are never produced from what users type, and whose bad inputs fail with a clear message."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex, Tokenizer, pre_tokenizers

from storage.fingerprint import hash_file
from storage.parquet import ParquetShardWriter
from storage.schemas import DOCUMENT_SCHEMA
from tasks.tokenizer import (
    CHAT_SPLIT_PATTERN,
    EOT,
    SPECIAL_TOKENS,
    TOKENIZER_FILE,
    TokenizerParams,
    load_tokenizer,
    new_tokenizer,
    train_tokenizer,
)
from tests.conftest import shared_file

TRICKY = [
    "ok <|endoftext|> then <|startoftext|>User<|separator|> hi <|pad|>",
    "مَرْحَبًا بِكُمْ، كيف الحال؟ ١٢٣٤",
    "sa7a, 3lach ma ja ch? wakha nchoufou ghda 😂😂",
    "family: 👨‍👩‍👧‍👦 thumbs 👍🏽 flags 🇲🇦🇫🇷",
    "line one\r\nline two\n\n\ttabbed   spaced  ",
    "I’m sure it’s fine, isn't it? 2024-05-01 10:30",
]


def corpus_docs() -> list[str]:
    """Real text: sentences in 8 languages (5 per document), Darija tweets, WhatsApp lines, Shakespeare."""
    docs: list[str] = []
    for lang in ("ar", "fa", "ur", "fr", "en", "de", "es", "nl"):
        lines = shared_file("langid", f"lingua_sentences_{lang}.txt").read_text(encoding="utf-8").splitlines()
        docs += [" ".join(lines[i : i + 5]) for i in range(0, 600, 5)]
    tweets = shared_file("langid", "afrisenti_ma_dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    docs += [t.split("\t")[1] for t in tweets if "\t" in t]
    docs += shared_file("whatsapp", "rwhatsapp_sample.txt").read_text(encoding="utf-8").splitlines()
    text = shared_file("text", "char-rnn_tinyshakespeare_input.txt").read_text(encoding="utf-8")
    docs += text[:200_000].split("\n\n")
    return docs


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("tok")
    info = train_tokenizer(corpus_docs(), out, TokenizerParams(vocab_size=1_024))
    return info, load_tokenizer(out)


def test_training_writes_tokenizer_json_and_reports_compression_and_time(trained):
    info, tok = trained
    assert info.path.endswith(TOKENIZER_FILE) and info.sha256 == hash_file(info.path)
    assert info.vocab_size == tok.get_vocab_size() == 1_024
    assert info.special_ids == {"<|startoftext|>": 0, "<|separator|>": 1, "<|endoftext|>": 2, "<|pad|>": 3}
    assert info.compression_on == "heldout" and info.heldout_docs > 10
    assert info.train_docs > 1_000 and info.train_bytes > 500_000
    assert 2.0 < info.bytes_per_token < 6.0  # a 1k-vocab BPE on mixed scripts
    assert info.measured_bytes == info.heldout_bytes
    assert info.train_seconds > 0 and info.train_mb_per_s > 0
    saved = json.loads(open(info.path, encoding="utf-8").read())
    assert [(t["content"], t["special"]) for t in saved["added_tokens"]] == [
        (s, True) for s in SPECIAL_TOKENS
    ]
    assert saved["normalizer"] is None  # text must decode back byte for byte


def test_special_tokens_are_never_produced_from_plain_text(trained):
    _, tok = trained
    specials = set(range(len(SPECIAL_TOKENS)))
    for text in [*TRICKY, EOT, "<|endoftext|><|endoftext|>", "x<|pad|>y"]:
        ids = tok.encode(text).ids
        assert not specials & set(ids), text
        assert tok.decode(ids, skip_special_tokens=False) == text
    batch = tok.encode_batch_fast([EOT, "<|separator|>"])
    assert all(not specials & set(e.ids) for e in batch)
    # inserted by id, a special token is one token and decodes to its string
    ids = tok.encode("hi").ids + [tok.token_to_id(EOT)]
    assert tok.decode(ids, skip_special_tokens=False) == "hi<|endoftext|>"
    assert tok.decode(ids, skip_special_tokens=True) == "hi"


def test_the_reason_for_load_tokenizer(trained):
    info, _ = trained
    bare = Tokenizer.from_file(info.path)  # the library's default matches special strings inside text
    assert 2 in bare.encode("a <|endoftext|> b").ids
    assert 2 not in load_tokenizer(info.path).encode("a <|endoftext|> b").ids


def test_text_in_every_script_round_trips_exactly(trained):
    _, tok = trained
    for text in TRICKY + corpus_docs()[::50]:
        assert tok.decode(tok.encode(text).ids, skip_special_tokens=False) == text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_unicode_text_round_trips(trained, text):
    _, tok = trained
    ids = tok.encode(text).ids
    assert tok.decode(ids, skip_special_tokens=False) == text
    assert not {0, 1, 2, 3} & set(ids)


def test_chat_pre_tokeniser_keeps_words_of_every_script_whole():
    split = pre_tokenizers.Split(Regex(CHAT_SPLIT_PATTERN), behavior="isolated").pre_tokenize_str

    def words(text):
        return [w for w, _ in split(text)]

    assert words("I’m fine 2day, sa7a 3lach") == ["I", "’m", " fine", " 2day", ",", " sa7a", " 3lach"]
    assert words("12345 ok") == ["123", "45", " ok"]  # numbers: groups of up to three digits
    assert len(split(" مَرْحَبًا")) == 1  # Arabic letters and their vowel marks stay one word
    assert len(split(" 👨‍👩‍👧‍👦👍🏽")) == 1
    # and the stage's tokenizer applies exactly this split before the byte-level mapping
    assert (
        len(new_tokenizer(TokenizerParams()).pre_tokenizer.pre_tokenize_str("I’m fine 2day, sa7a 3lach")) == 7
    )


def test_training_is_deterministic_and_reads_parquet_parts(tmp_path):
    docs = corpus_docs()[::4]
    part = tmp_path / "sample" / "part-00000.parquet"
    with ParquetShardWriter(part, DOCUMENT_SCHEMA) as w:
        w.write_rows(
            {"id": f"d{i}", "text": t, "source": "text", "url": None, "timestamp": None, "meta": None}
            for i, t in enumerate(docs)
        )
    params = TokenizerParams(vocab_size=600)
    a = train_tokenizer([str(part)], tmp_path / "a", params)
    b = train_tokenizer([part], tmp_path / "b", params)
    assert a.sha256 == b.sha256
    assert a.train_docs + a.heldout_docs == sum(1 for t in docs if t)


@pytest.mark.parametrize("pretokenizer", ["gpt4", "gpt2"])
def test_the_comparison_pre_tokenisers_train_too(tmp_path, pretokenizer):
    info = train_tokenizer(
        corpus_docs()[::8], tmp_path, TokenizerParams(vocab_size=400, pretokenizer=pretokenizer)
    )
    tok = load_tokenizer(tmp_path)
    assert info.pretokenizer == pretokenizer and tok.get_vocab_size() == 400
    assert tok.decode(tok.encode(TRICKY[0]).ids) == TRICKY[0]


def test_a_tiny_sample_still_trains_and_says_where_compression_was_measured(tmp_path):
    info = train_tokenizer(["just one short document"], tmp_path, TokenizerParams(vocab_size=300))
    assert info.train_docs == 1 and info.compression_on in ("train", "heldout")
    assert info.vocab_size <= 300


def test_vocab_smaller_than_bytes_plus_specials_is_refused():
    with pytest.raises(ValueError, match="256 byte symbols \\+ 4 special tokens = 260"):
        TokenizerParams(vocab_size=259)
    assert TokenizerParams(vocab_size=260).vocab_size == 260


def test_empty_sample_is_refused_and_writes_nothing(tmp_path):
    with pytest.raises(ValueError, match="the sample is empty"):
        train_tokenizer([], tmp_path / "a", TokenizerParams(vocab_size=300))
    with pytest.raises(ValueError, match="the sample is empty \\(3 empty documents"):
        train_tokenizer(["", "", ""], tmp_path / "b", TokenizerParams(vocab_size=300))
    assert not (tmp_path / "a" / TOKENIZER_FILE).exists() and not (tmp_path / "b" / TOKENIZER_FILE).exists()
    # an empty sample dataset: the message names its folder
    sample = tmp_path / "sample"
    for i in range(2):
        with ParquetShardWriter(sample / f"part-{i:05d}.parquet", DOCUMENT_SCHEMA):
            pass
    with pytest.raises(ValueError, match=f"^{sample}: the sample is empty .*sample.fraction"):
        train_tokenizer(sorted(sample.glob("*.parquet")), tmp_path / "c", TokenizerParams(vocab_size=300))


def test_loading_a_missing_or_foreign_tokenizer_is_explained(tmp_path):
    with pytest.raises(ValueError, match="no tokenizer file"):
        load_tokenizer(tmp_path)
    (tmp_path / TOKENIZER_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="not a HuggingFace tokenizer.json"):
        load_tokenizer(tmp_path)
