"""The encode stage as plain functions: documents → {train,val} token shards that decode back to exactly the
input documents with `<|endoftext|>` after each, byte-identical on reruns, uint16 or uint32 as the vocabulary
needs, and readable by the training loaders and by a plain np.memmap."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from storage.fingerprint import hash_file
from storage.parquet import ParquetShardWriter
from storage.schemas import DOCUMENT_SCHEMA
from storage.tokens import RandomWindowSampler, TokenShards, iter_documents, iter_sequential_windows
from tasks.encode import EncodeParams, encode_shard, shard_path
from tasks.encode import summarize_encode as summarize
from tasks.sample import document_key, nominal_threshold
from tasks.tokenizer import EOT, SPECIAL_TOKENS, TokenizerParams, new_tokenizer, train_tokenizer
from tests.conftest import shared_file

TRICKY = [
    "User typed <|endoftext|> and <|pad|> in the middle of a message",
    "مَرْحَبًا بِكُمْ 😂👨‍👩‍👧‍👦",
    "wakha a sa7bi, 3lach la?",
    "crlf\r\nline\n\n  ",
    "x",
]


def real_docs() -> list[str]:
    docs = []
    for lang in ("ar", "fr", "en", "ur"):
        lines = shared_file("langid", f"lingua_sentences_{lang}.txt").read_text(encoding="utf-8").splitlines()
        docs += [" ".join(lines[i : i + 4]) for i in range(0, 400, 4)]
    docs += shared_file("whatsapp", "rwhatsapp_sample.txt").read_text(encoding="utf-8").split("\n")[:200]
    return docs


def write_parts(folder, texts_per_part):
    paths = []
    for i, texts in enumerate(texts_per_part):
        path = folder / f"part-{i:05d}.parquet"
        with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
            w.write_rows(
                {
                    "id": f"p{i}-d{j}",
                    "text": t,
                    "source": "text",
                    "url": None,
                    "timestamp": None,
                    "meta": None,
                }
                for j, t in enumerate(texts)
            )
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("enc")
    docs = real_docs()
    third = len(docs) // 3
    texts = [docs[:third] + TRICKY + [""], docs[third : 2 * third], docs[2 * third :] + [""]]
    parts = write_parts(root / "in", texts)
    info = train_tokenizer(docs, root / "tok", TokenizerParams(vocab_size=800))
    return parts, texts, info.path


def encode_all(parts, tok_path, out_dir, params):
    return [encode_shard(p, tok_path, str(out_dir), i, params) for i, p in enumerate(parts)]


def test_decoding_the_shards_gives_back_every_document_with_separators(corpus, tmp_path):
    parts, texts, tok_path = corpus
    params = EncodeParams(val_fraction=0.2)
    results = encode_all(parts, tok_path, tmp_path, params)
    tok = Tokenizer.from_file(tok_path)
    eot = tok.token_to_id(EOT)
    val_below = nominal_threshold(0.2)
    for i, part_texts in enumerate(texts):
        for split in ("train", "val"):
            expected = [
                t
                for j, t in enumerate(part_texts)
                if t and (document_key("encode-val", f"p{i}-d{j}") < val_below) == (split == "val")
            ]
            decoded = []
            for doc in iter_documents(shard_path(tmp_path, split, i)):
                assert doc[-1] == eot and eot not in doc[:-1].tolist()  # exactly one separator, at the end
                decoded.append(tok.decode(doc[:-1].tolist(), skip_special_tokens=False))
            assert decoded == expected, (i, split)  # same documents, same order
            assert results[i].extra["docs"][split] == len(expected)
    counts, stats = summarize(results)
    assert counts["in"] == sum(len(t) for t in texts)
    empty = sum(1 for part_texts in texts for t in part_texts if not t)
    assert empty >= 2 and counts["dropped_empty_text"] == empty
    assert counts["out"] == counts["in"] - empty == counts["docs_train"] + counts["docs_val"]
    assert 0.1 < counts["docs_val"] / counts["out"] < 0.3


def test_manifest_summary_has_what_a_reader_needs(corpus, tmp_path):
    parts, _, tok_path = corpus
    results = encode_all(parts, tok_path, tmp_path, EncodeParams(val_fraction=0.2))
    counts, stats = summarize(results)
    for split in ("train", "val"):
        shards = TokenShards(tmp_path, split)
        assert len(shards) == 3 and shards.dtype == np.uint16
        assert counts[f"tokens_{split}"] == stats["tokens"][split] == shards.num_tokens
        assert stats["documents"][split] == shards.num_documents
    assert stats["dtype"] == "uint16" and stats["vocab_size"] == 800
    assert stats["special_ids"] == {s: i for i, s in enumerate(SPECIAL_TOKENS)} and stats["eot_id"] == 2
    assert stats["tokenizer_sha256"] == hash_file(tok_path)
    assert 2 < stats["bytes_per_token"] < 6
    assert sorted(results[1].info["files"]) == [
        "train/shard-00001.bin",
        "train/shard-00001.idx",
        "val/shard-00001.bin",
        "val/shard-00001.idx",
    ]


def test_same_input_same_bytes_and_each_shard_can_be_redone_alone(corpus, tmp_path):
    parts, _, tok_path = corpus
    params = EncodeParams(val_fraction=0.1)
    encode_all(parts, tok_path, tmp_path / "a", params)
    encode_all(parts, tok_path, tmp_path / "b", params)
    encode_shard(parts[1], tok_path, str(tmp_path / "c"), 1, params)  # a resumed run redoing one shard
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 12
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    for f in ("train/shard-00001.bin", "train/shard-00001.idx", "val/shard-00001.bin"):
        assert (tmp_path / "c" / f).read_bytes() == (tmp_path / "a" / f).read_bytes()
    assert not list((tmp_path / "a").rglob("*.partial"))


def test_shards_load_with_plain_memmap_and_feed_both_loaders(corpus, tmp_path):
    parts, _, tok_path = corpus
    encode_all(parts, tok_path, tmp_path, EncodeParams(val_fraction=0.0))
    assert not (tmp_path / "val").exists()  # no document drawn for val: no val shards
    train = TokenShards(tmp_path, "train")
    plain = np.concatenate([np.memmap(p, dtype=np.uint16, mode="r") for p in train])  # nanoGPT's way
    assert plain.size == train.num_tokens and plain.max() < 800
    x, y = RandomWindowSampler(train, block_size=64, batch_size=4, seed=0).next_batch()
    assert x.shape == (4, 64) and np.array_equal(x[:, 1:], y[:, :-1])
    n_targets = sum(int((y != -100).sum()) for _, y in iter_sequential_windows(train, 64, 8))
    assert n_targets == plain.size - 1


def big_vocab_tokenizer(path, size=70_000):
    """A byte-level BPE with more than 65,536 ids, whose one merge ('h','e') lands on id 69,999."""
    vocab = {s: i for i, s in enumerate(SPECIAL_TOKENS)}
    for c in pre_tokenizers.ByteLevel.alphabet():
        vocab[c] = len(vocab)
    while len(vocab) < size - 1:
        vocab[f"<filler{len(vocab)}>"] = len(vocab)
    vocab["he"] = size - 1
    base = new_tokenizer(TokenizerParams())
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("h", "e")]))
    tok.pre_tokenizer, tok.decoder = base.pre_tokenizer, base.decoder
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    tok.save(str(path))
    return str(path)


def test_a_vocabulary_over_65536_ids_gets_uint32_shards(tmp_path):
    tok_path = big_vocab_tokenizer(tmp_path / "tokenizer.json")
    parts = write_parts(tmp_path / "in", [["hello there", "the end"]])
    result = encode_shard(parts[0], tok_path, str(tmp_path / "out"), 0, EncodeParams(val_fraction=0))
    assert result.info["dtype"] == "uint32" and result.info["vocab_size"] == 70_000
    tokens = np.memmap(shard_path(tmp_path / "out", "train", 0), dtype=np.uint32, mode="r")
    assert 69_999 in tokens.tolist()  # "he" — an id that uint16 would have wrapped
    tok = Tokenizer.from_file(tok_path)
    docs = [tok.decode(d[:-1].tolist()) for d in iter_documents(shard_path(tmp_path / "out", "train", 0))]
    assert docs == ["hello there", "the end"]
    with pytest.raises(
        ValueError, match=r"tokenizer\.json: a tokenizer with 70,000 ids does not fit uint16 token shards"
    ):
        encode_shard(parts[0], tok_path, str(tmp_path / "forced"), 0, EncodeParams(dtype="uint16"))
    assert not (tmp_path / "forced").exists() or not list((tmp_path / "forced").rglob("*.bin"))


def test_bad_inputs_are_explained(corpus, tmp_path):
    parts, _, tok_path = corpus
    with pytest.raises(ValueError, match="no tokenizer file"):
        encode_shard(parts[0], str(tmp_path / "missing"), str(tmp_path / "out"), 0, EncodeParams())
    bad = tmp_path / "part-00000.parquet"
    with ParquetShardWriter(bad, pa.schema([("id", pa.string())])) as w:
        w.write_row({"id": "a"})
    with pytest.raises(ValueError, match="not a document part \\(no 'text' column\\)"):
        encode_shard(str(bad), tok_path, str(tmp_path / "out"), 0, EncodeParams())


def test_sample_then_tokenizer_then_encode_chain(corpus, tmp_path):
    from storage.parquet import parquet_files
    from tasks.sample import SampleParams, apply_byte_bound, sample_shard

    parts, texts, _ = corpus
    params = SampleParams(fraction=0.3, min_bytes=0, max_bytes=200_000)
    results = [
        sample_shard(p, str(tmp_path / "sample" / f"part-{i:05d}.parquet"), params)
        for i, p in enumerate(parts)
    ]
    apply_byte_bound(results, params)
    info = train_tokenizer(
        parquet_files(tmp_path / "sample"), tmp_path / "tok", TokenizerParams(vocab_size=512)
    )
    assert 0 < info.train_bytes + info.heldout_bytes <= 200_000
    out = encode_all(parts, info.path, tmp_path / "enc", EncodeParams())
    counts, stats = summarize(out)
    assert counts["out"] == sum(1 for part_texts in texts for t in part_texts if t)
    assert stats["tokenizer_sha256"] == info.sha256 and stats["vocab_size"] == 512
