"""kenlm-train: lmplz/build_binary on small real corpora, the normalised training text, bad references, and a
trained model used by the perplexity stage (in-domain text scores lower than shuffled or foreign text)."""

from __future__ import annotations

import gzip
import json
import random
import sys

import kenlm
import pyarrow as pa
import pytest
from pydantic import ValidationError

from storage.parquet import ParquetShardWriter, iter_rows
from storage.schemas import DOCUMENT_SCHEMA
from tasks.kenlm_train import (
    KenlmToolMissing,
    KenlmTrainError,
    KenlmTrainParams,
    find_kenlm_tool,
    iter_reference_lines,
    resolve_reference_files,
    sorting_memory,
    summarize,
    train_kenlm,
    train_reference_models,
)
from tasks.perplexity import (
    PerplexityParams,
    PerplexityScorer,
    lm_tokens,
    resolve_models,
    tag_perplexity_shard,
)
from tests.conftest import shared_file

MEMORY = "64M"  # lmplz sorting memory: the tests share a small machine


def _lmplz_or_skip() -> None:
    try:
        find_kenlm_tool("lmplz")
        find_kenlm_tool("build_binary")
    except KenlmToolMissing as exc:
        pytest.skip(str(exc))


def _shakespeare() -> list[str]:
    return shared_file("text", "char-rnn_tinyshakespeare_input.txt").read_text(encoding="utf-8").splitlines()


def _shuffled_words(lines: list[str], seed: int = 0) -> str:
    words = " ".join(lines).split()
    random.Random(seed).shuffle(words)
    return "\n".join(" ".join(words[i : i + 10]) for i in range(0, len(words), 10))


@pytest.fixture(scope="module")
def shakespeare_model(tmp_path_factory):
    _lmplz_or_skip()
    out = tmp_path_factory.mktemp("kenlm") / "en"
    info = train_kenlm(_shakespeare()[:3000], out, order=5, memory=MEMORY, keep_text=True)
    return info, out


def test_training_writes_arpa_binary_and_stats(shakespeare_model):
    info, out = shakespeare_model
    assert (out / "model.arpa").is_file() and (out / "model.binary").is_file()
    assert info.binary == str(out / "model.binary")
    assert info.order == 5 and len(info.ngram_counts) == 5
    assert info.lines_in == 3000
    assert info.lines + info.lines_without_tokens == 3000  # blank lines of the play carry no token
    assert info.tokens > 15_000 and 2000 < info.vocab_size < 4000
    assert info.binary_bytes > 0 and len(info.binary_sha256) == 64
    assert kenlm.Model(info.binary).order == 5
    counts, stats = summarize({"en": info})
    assert counts["in"] == 3000 and counts["out"] == info.lines and counts["dropped_no_tokens"] > 0
    assert stats["models"]["en"]["ngram_counts"] == info.ngram_counts


def test_training_text_is_normalised_like_scoring(shakespeare_model):
    info, out = shakespeare_model
    written = (out / "train.txt").read_text(encoding="utf-8").splitlines()
    raw = [line for line in _shakespeare()[:3000] if lm_tokens(line)]
    assert written == [" ".join(lm_tokens(line)) for line in raw]
    assert written[:2] == ["first citizen :", "before we proceed any further , hear me speak ."]
    text = "\n".join(written)
    assert text == text.lower() and not any(c in text for c in "123456789")
    # scoring a raw line through the scorer == scoring its written form with kenlm directly
    scorer = PerplexityScorer(info.binary)
    model = kenlm.Model(info.binary)
    for raw_line, line in zip(raw[:50], written[:50], strict=True):
        assert scorer.score_line(raw_line) == pytest.approx(model.score(line, bos=True, eos=True))


def test_in_domain_text_scores_lower(shakespeare_model):
    info, _ = shakespeare_model
    scorer = PerplexityScorer(info.binary)
    held_out = _shakespeare()[3000:3600]
    in_domain = scorer.perplexity("\n".join(held_out))
    shuffled = scorer.perplexity(_shuffled_words(held_out))
    english_news = scorer.perplexity(
        shared_file("langid", "lingua_sentences_en.txt").read_text(encoding="utf-8")
    )
    french = scorer.perplexity(shared_file("langid", "lingua_sentences_fr.txt").read_text(encoding="utf-8"))
    assert in_domain < shuffled < french
    assert in_domain < english_news < french
    assert 2 * in_domain < shuffled


def test_empty_reference_is_a_clear_error(tmp_path):
    _lmplz_or_skip()
    with pytest.raises(ValueError, match="reference corpus for 'en' is empty: 4 line"):
        train_kenlm(["", "   ", "\x00\x07", "\u200b"], tmp_path / "en", memory=MEMORY, name="'en'")
    assert not (tmp_path / "en" / "model.binary").exists()


def test_lmplz_failure_shows_its_stderr(tmp_path):
    _lmplz_or_skip()
    tiny = ["the cat sat on the mat", "the dog sat on the log"]
    with pytest.raises(KenlmTrainError, match=r"(?s)lmplz failed.*discount"):
        train_kenlm(tiny, tmp_path / "never", memory=MEMORY, discount_fallback="never")
    # the default retries with --discount_fallback and says so
    info = train_kenlm(tiny, tmp_path / "auto", memory=MEMORY)
    assert info.discount_fallback is True and (tmp_path / "auto" / "model.binary").is_file()


def test_missing_tools_say_how_to_build_them(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KenlmToolMissing, match="make setup"):
        find_kenlm_tool("lmplz")
    with pytest.raises(KenlmToolMissing, match="`lmplz` was not found"):
        train_kenlm(["some text"], tmp_path / "m")


def test_reference_files_in_several_formats(tmp_path):
    (tmp_path / "a.txt").write_text("Line one\nLine two\n", encoding="utf-8")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps({"text": "Json first\nJson second"}) + "\n\n" + json.dumps({"other": 1}) + "\n")
    with ParquetShardWriter(tmp_path / "c.parquet", DOCUMENT_SCHEMA) as w:
        w.write_row(
            {
                "id": "1",
                "text": "From parquet",
                "source": "text",
                "url": None,
                "timestamp": None,
                "meta": None,
            }
        )
    files = resolve_reference_files(
        [str(tmp_path / "*.txt"), str(tmp_path / "b.jsonl.gz"), str(tmp_path / "c.*")]
    )
    assert [f.name for f in files] == ["a.txt", "b.jsonl.gz", "c.parquet"]
    lines = [line.rstrip("\n") for line in iter_reference_lines(files)]
    assert lines == ["Line one", "Line two", "Json first", "Json second", "From parquet"]

    with pytest.raises(ValueError, match="no file matches"):
        resolve_reference_files([str(tmp_path / "*.none")], "en")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt:1: reference text is not UTF-8"):
        list(iter_reference_lines([tmp_path / "latin1.txt"]))
    (tmp_path / "broken.jsonl").write_text('{"text": "ok"}\n{"text": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken.jsonl:2: not a JSON line"):
        list(iter_reference_lines([tmp_path / "broken.jsonl"]))


def test_lmplz_sorts_with_memory_sized_by_its_text_and_the_model_is_the_same(tmp_path):
    """'auto' (the default) asks lmplz for what a text of that size needs, not a fifth of the machine (which it
    then takes: 0.9 GB for a 5 MB text), and at most that fifth; a value given is passed as it is."""
    assert KenlmTrainParams().memory == "auto"
    assert sorting_memory("auto", 5 << 20) == "256M"
    assert sorting_memory("auto", 64 << 20) in ("2560M", "20%")  # 20 %: a machine of under 12.5 GB
    assert sorting_memory("auto", 1 << 50) == "20%"
    assert sorting_memory("2G", 1) == "2G" and sorting_memory("20%", 1 << 50) == "20%"
    _lmplz_or_skip()
    text = _shakespeare()[:3000]
    auto = train_kenlm(text, tmp_path / "auto", order=4)
    given = train_kenlm(text, tmp_path / "given", order=4, memory=MEMORY)
    assert (tmp_path / "auto" / "model.arpa").read_bytes() == (tmp_path / "given" / "model.arpa").read_bytes()
    assert auto.ngram_counts == given.ngram_counts


def test_params_are_strict():
    p = KenlmTrainParams(references={"en": ["ref/*.txt"]})
    assert p.order == 5 and p.discount_fallback == "auto"
    assert "memory" not in p.fingerprint_params()
    with pytest.raises(ValidationError):
        KenlmTrainParams(order=7)
    with pytest.raises(ValidationError, match="first value must be 0"):
        KenlmTrainParams(prune=[1, 1])
    with pytest.raises(ValidationError, match="non-decreasing"):
        KenlmTrainParams(prune=[0, 2, 1])
    with pytest.raises(ValidationError):
        KenlmTrainParams(memory="lots")
    with pytest.raises(ValidationError):
        KenlmTrainParams(references={"en": []})
    with pytest.raises(ValidationError):
        KenlmTrainParams(refrences={})


def _doc(i: int, text: str, lang: str | None) -> dict:
    return {
        "id": f"d{i}",
        "text": text,
        "source": "text",
        "url": None,
        "timestamp": None,
        "meta": None,
        "lang": lang,
    }


LANG_SCHEMA = DOCUMENT_SCHEMA.append(pa.field("lang", pa.string()))


def test_models_per_language_score_their_own_language(tmp_path):
    _lmplz_or_skip()
    en = shared_file("langid", "lingua_sentences_en.txt")
    fr = shared_file("langid", "lingua_sentences_fr.txt")
    de = shared_file("langid", "lingua_sentences_de.txt")
    refs = tmp_path / "refs"
    refs.mkdir()
    # train on the first 800 sentences of each language, score the last 200
    for lang, path in (("en", en), ("fr", fr)):
        lines = path.read_text(encoding="utf-8").splitlines()
        (refs / f"{lang}.txt").write_text("\n".join(lines[:800]), encoding="utf-8")
    params = KenlmTrainParams(
        order=4,
        references={"en": [str(refs / "en.txt")], "fr": [str(refs / "fr.*")]},
        memory=MEMORY,
        prune=[0, 0, 1],
    )
    models = tmp_path / "kenlm-train"
    infos = train_reference_models(params, models)
    assert set(infos) == {"en", "fr"} and all(i.order == 4 for i in infos.values())
    assert infos["fr"].sources == [str(refs / "fr.txt")]
    found = resolve_models(PerplexityParams(models_dir=str(models)))
    assert found == {"en": models / "en" / "model.binary", "fr": models / "fr" / "model.binary"}

    held = {
        lang: p.read_text(encoding="utf-8").splitlines()[800:]
        for lang, p in (("en", en), ("fr", fr), ("de", de))
    }
    rows = [_doc(i, text, lang) for lang in held for i, text in enumerate(held[lang][:50])]
    with ParquetShardWriter(tmp_path / "in.parquet", LANG_SCHEMA) as w:
        w.write_rows(rows)
    result = tag_perplexity_shard(
        str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet"), PerplexityParams(models_dir=str(models))
    )
    assert result.extra["tagged"] == 100 and result.extra["no_model"] == {"de": 50}

    # each language's documents score lower under their own model than under the other one
    scorers = {lang: PerplexityScorer(path) for lang, path in found.items()}
    for lang, other in (("en", "fr"), ("fr", "en")):
        text = "\n".join(held[lang])
        assert scorers[lang].perplexity(text) < scorers[other].perplexity(text) / 3
    tagged = [r for r in iter_rows(tmp_path / "out.parquet") if r["perplexity"] is not None]
    assert all(r["perplexity"] > 1 for r in tagged)


def test_reference_dataset_with_lang_column(tmp_path):
    _lmplz_or_skip()
    dataset = tmp_path / "langid"
    lines = {
        "en": shared_file("langid", "lingua_sentences_en.txt").read_text(encoding="utf-8").splitlines()[:300],
        "nl": shared_file("langid", "lingua_sentences_nl.txt").read_text(encoding="utf-8").splitlines()[:300],
    }
    with ParquetShardWriter(dataset / "part-00000.parquet", LANG_SCHEMA) as w:
        for lang, texts in lines.items():
            w.write_rows(_doc(i, t, lang) for i, t in enumerate(texts))
        w.write_row(_doc(999, "no language", None))
    params = KenlmTrainParams(
        order=3, reference_dataset=str(dataset), reference_languages=["nl"], memory=MEMORY
    )
    infos = train_reference_models(params, tmp_path / "out")
    assert list(infos) == ["nl"] and infos["nl"].lines_in == 300
    all_langs = train_reference_models(
        params.model_copy(update={"reference_languages": []}), tmp_path / "out2"
    )
    assert sorted(all_langs) == ["en", "nl"]
    with pytest.raises(ValueError, match="no part-"):
        train_reference_models(KenlmTrainParams(reference_dataset=str(tmp_path / "empty")), tmp_path / "o")
    with pytest.raises(ValueError, match="no reference corpus configured"):
        train_reference_models(KenlmTrainParams(), tmp_path / "o")


def test_ccnet_head_documents_beat_their_shuffled_words(tmp_path):
    """The 10 CCNet 'head' documents (recorded perplexity 168–320 under CCNet's Wikipedia model) read as text by
    a model trained on our small English reference: each scores lower than a shuffle of its own words."""
    _lmplz_or_skip()
    reference = [
        *shared_file("text", "sentencepiece_botchan.txt").read_text(encoding="utf-8").splitlines(),
        *shared_file("langid", "lingua_sentences_en.txt").read_text(encoding="utf-8").splitlines(),
    ]
    info = train_kenlm(reference, tmp_path / "en", memory=MEMORY)
    scorer = PerplexityScorer(info.binary)
    path = shared_file("commoncrawl", "dolma_cc_en_head-0091.jsonl.gz")
    docs = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    for i, d in enumerate(docs):
        assert d["metadata"]["perplexity"] > 0
        ours = scorer.perplexity(d["text"])
        shuffled = scorer.perplexity(_shuffled_words(d["text"].splitlines(), seed=i))
        assert ours < shuffled, d["id"]
