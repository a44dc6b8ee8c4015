"""The likeness measures on small hand-written inputs with known answers: ROC AUC and the classifier two-sample
test, the three-class who-said-it classifier, memorisation (exact and near copies, not others), the style
statistics, the held-out texts read from sft-data splits and corpus snippets, and the whole measurement."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from storage.parquet import ParquetShardWriter
from storage.schemas import DOCUMENT_SCHEMA, MESSAGE_SCHEMA
from tasks.likeness import (
    ChatTurns,
    ClassifierParams,
    MemorisationParams,
    ModelReplies,
    PersonaEvalParams,
    TrainingMessageIndex,
    c2st_auc,
    corpus_snippets,
    distinct_n,
    emoji_share,
    ks_distance,
    measure_likeness,
    read_chat_turns,
    read_held_out,
    roc_auc,
    train_who_said_it,
    write_likeness,
)
from tasks.likeness.memorisation import lsh_shape
from tasks.likeness.style import emoji_count, language_mix, total_variation
from tasks.sft_data import SFT_SCHEMA

FRUIT = "apple banana cherry mango kiwi papaya guava lemon melon plum".split()
ENGINES = "truck wheel engine brake gear clutch piston valve diesel axle".split()
HARBOUR = "harbour boats ships tide wind sails anchor pier lighthouse gulls".split()
FAST = ClassifierParams(epochs=15, bucket=10_000)


def _sentences(vocabulary: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(4, 9))) for _ in range(n)]


# ------------------------------------------------------------------------------------------------ classifiers


def test_roc_auc_counts_ordered_pairs_and_half_ties():
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(0.75)
    assert roc_auc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    assert roc_auc([0.9, 0.8, 0.2, 0.1], [False, False, True, True]) == 0.0
    assert roc_auc([0.5] * 6, [True, False] * 3) == 0.5
    with pytest.raises(ValueError, match="both classes"):
        roc_auc([0.1, 0.2], [True, True])


def test_two_sample_auc_is_one_half_for_identical_sets_and_one_for_separable_ones():
    real = _sentences(FRUIT, 40, seed=1)
    groups = [f"p{i}" for i in range(40)]
    assert c2st_auc(real, list(real), FAST, real_groups=groups, generated_groups=groups) == pytest.approx(0.5)
    assert c2st_auc(real, _sentences(FRUIT, 40, seed=2), FAST) == pytest.approx(0.5, abs=0.2)
    assert c2st_auc(real, _sentences(ENGINES, 40, seed=3), FAST) > 0.95
    assert c2st_auc(real[:3], _sentences(ENGINES, 3, seed=3), FAST) is None  # too few to cross-validate


def test_who_said_it_keeps_text_that_is_not_the_chat_away_from_the_person():
    who = train_who_said_it(_sentences(FRUIT, 120, 1), _sentences(ENGINES, 120, 2), _sentences(HARBOUR, 120, 3),
                            FAST)
    assert who.labels == ["corpus", "others", "person"]
    assert who.predict(_sentences(FRUIT, 50, 4)).count("person") >= 45
    assert who.predict(_sentences(ENGINES, 50, 5)).count("person") <= 5
    assert who.predict(_sentences(HARBOUR, 50, 6)).count("person") <= 5
    assert who.predict([""]) and who.probabilities([""]).shape == (1, 3)  # an empty reply is a text too


# ------------------------------------------------------------------------------------------------ memorisation


TRAINING = [
    "See you tomorrow at the harbour, bring the big blue boat please",
    "I can't make it on Saturday, my sister is visiting from Lyon",
    "ok",
    "haha yes",
]


def test_memorisation_flags_exact_and_near_copies_only():
    index = TrainingMessageIndex(TRAINING, MemorisationParams())
    exact, near, other, short, loose = index.match([
        "see you TOMORROW at the harbour... bring the big blue boat, please!",  # equal once normalised
        "See you tomorrow at the harbour, bring the big red boat please",  # one word changed
        "Saturday works for me, what time at the pier?",
        "ok",  # repeats a training message but is too short to be recited
        "my sister is coming on Sunday, can't make it to the harbour",  # shares words, not the message
    ])
    assert (exact.kind, exact.similarity, exact.source) == ("exact", 1.0, TRAINING[0])
    assert near.kind == "near" and near.source == TRAINING[0] and 0.6 <= near.similarity < 1.0
    assert other.kind is None and short.kind is None and loose.kind is None and loose.similarity < 0.6
    assert not other.memorised and exact.memorised


def test_the_lsh_shape_makes_a_pair_at_the_threshold_a_candidate_almost_surely():
    from tasks.dedup.minhash import candidate_probability

    for threshold in (0.4, 0.6, 0.8):
        bands, rows = lsh_shape(threshold)
        assert bands * rows == 128 and candidate_probability(threshold, bands, rows) >= 0.98


# ------------------------------------------------------------------------------------------------ style


def test_ks_distance():
    assert ks_distance([1, 2, 3], [1, 2, 3]) == 0.0
    assert ks_distance([1, 2, 3], [10, 20]) == 1.0
    assert ks_distance([1, 2, 3], [2, 3, 4]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        ks_distance([], [1])


def test_distinct_n_emoji_and_language_mix():
    assert distinct_n(["a b a b"], 1) == 0.5
    assert distinct_n(["a b a b"], 2) == pytest.approx(2 / 3)
    assert distinct_n(["A b", "a B"], 2) == 0.5  # over the whole set, case folded
    assert distinct_n(["a"], 2) == 0.0
    assert emoji_share(["hi 🙂", "no", "🇫🇷 👍🏽", "a → b"]) == 0.5
    assert emoji_count("🇫🇷 👍🏽 ❤️") == 3  # a flag and a skin-toned thumb count once each
    assert language_mix(["en", "fr", "en", "en"]) == {"en": 0.75, "fr": 0.25}
    assert total_variation({"en": 0.5, "fr": 0.5}, {"en": 1.0}) == 0.5


# ------------------------------------------------------------------------------------------------ texts


def _split(path: Path, examples: list[tuple[str, int, list[tuple[str, str]]]]) -> Path:
    rows = [{"example_id": f"e{i}", "chat_id": chat, "session": session, "text": "",
             "turns": [{"role": r, "text": t} for r, t in turns], "n_tokens": 10}
            for i, (chat, session, turns) in enumerate(examples)]
    with ParquetShardWriter(path, SFT_SCHEMA) as w:
        w.write_rows(rows)
    return path


def test_held_out_turns_and_distinct_training_turns(tmp_path):
    window = [("User", "Hey Sam!"), ("Assistant", "hi"), ("User", "Saturday?"), ("Assistant", "yes 🙂")]
    val = _split(tmp_path / "val.parquet", [("c", 0, window[:2]), ("c", 0, window)])
    held = read_held_out(val, max_prompts=10)
    assert [(t.prompt_id, t.user_turn, t.reply) for t in held] == [("e0", "Hey Sam!", "hi"),
                                                                   ("e1", "Saturday?", "yes 🙂")]
    assert len(held[1].context) == 3 and held[1].context[-1] == {"role": "User", "text": "Saturday?"}
    assert len(read_held_out(val, max_prompts=1)) == 1
    assert read_chat_turns(val) == ChatTurns(person=["hi", "yes 🙂"], others=["Hey Sam!", "Saturday?"])


def test_an_empty_held_out_split_is_a_one_line_error(tmp_path):
    val = _split(tmp_path / "val.parquet", [])
    with pytest.raises(ValueError, match=r"val.parquet holds no held-out examples .*single session.*val_fraction"):
        read_held_out(val, max_prompts=10)


def test_corpus_snippets_come_from_documents_that_are_not_chats(tmp_path):
    ingest = tmp_path / "ingest"
    docs = [{"id": f"d{i}", "text": " ".join(f"w{i}x{j}" for j in range(40)), "source": "text", "url": None,
             "timestamp": None, "meta": None} for i in range(5)]
    chat = [{"id": "chat", "text": "Sam: hello there my friend", "source": "mychats", "url": None,
             "timestamp": None, "meta": None}]
    for i, rows in enumerate([docs, chat]):
        with ParquetShardWriter(ingest / f"part-{i:05d}.parquet", DOCUMENT_SCHEMA) as w:
            w.write_rows(rows)
    for i, rows in enumerate([[], [{"chat_id": "c", "index": 0, "timestamp": None, "author": "Sam",
                                    "text": "hello there my friend", "kind": "text", "source_file": "x.txt"}]]):
        with ParquetShardWriter(ingest / "messages" / f"part-{i:05d}.parquet", MESSAGE_SCHEMA) as w:
            w.write_rows(rows)
    snippets = corpus_snippets(ingest, 12, [3, 5], seed=1)
    assert len(snippets) == 12
    assert all(len(s.split()) in (3, 5) and s.startswith("w") for s in snippets)
    assert snippets == corpus_snippets(ingest, 12, [3, 5], seed=1)  # deterministic
    assert corpus_snippets(ingest, 0, [3]) == []


# ------------------------------------------------------------------------------------------------ the stage


def test_measure_likeness_ranks_a_copy_of_the_person_above_noise_and_a_reciter(tmp_path):
    from tasks.likeness.texts import HeldOutTurn

    person_train, others_train = _sentences(FRUIT, 150, 1), _sentences(ENGINES, 150, 2)
    real = _sentences(FRUIT, 30, 3)
    held_out = [HeldOutTurn(f"e{i}", "c", i % 3, ({"role": "User", "text": "and you?"},), r)
                for i, r in enumerate(real)]
    models = [
        ModelReplies("base", _sentences(HARBOUR, 30, 4), [False] * 30, "ckpt"),
        ModelReplies("sft", list(real), [True] * 30, "sft"),  # as the person would answer
        ModelReplies("lora", person_train[:30], [True] * 30, "ckpt", "adapter"),  # recites its training set
    ]
    params = PersonaEvalParams(classifier=FAST, sample_rows=3)
    result = measure_likeness(held_out, _sentences(ENGINES, 30, 5), ChatTurns(person_train, others_train),
                              _sentences(HARBOUR, 150, 6), models, params, lambda texts: ["en"] * len(texts),
                              person="Sam", perplexity={"base": 40.0, "sft": 12.5})
    rows = {r.name: r for r in result.rows}
    assert list(rows) == ["person", "others", "base", "sft", "lora"]
    assert rows["person"].said_by_person > 0.9 and rows["others"].said_by_person < 0.1
    assert rows["base"].said_by_person < 0.1  # noise is not credited to the person
    assert rows["sft"].auc == pytest.approx(0.5) and rows["base"].auc > 0.95 and rows["others"].auc > 0.95
    assert rows["lora"].memorised == 1.0 and rows["lora"].auc_unmemorised is None
    assert rows["sft"].memorised == 0.0 and rows["base"].finished == 0.0 and rows["sft"].finished == 1.0
    assert rows["sft"].perplexity == 12.5 and rows["lora"].perplexity is None
    assert rows["sft"].style.length_ks == 0.0 and rows["base"].style.language_tv == 0.0
    assert len(result.samples) == 3 and set(result.samples[0]) >= {"user_turn", "person", "base", "sft", "lora"}

    files = write_likeness(result, tmp_path / "out")
    table = files["table"].read_text(encoding="utf-8")
    assert "| Sam, real (ceiling) | 30 |" in table and "| others, real (floor) | 30 |" in table
    assert "| LoRA | 30 |" in table and "### Sample replies" in table
    figures = json.loads(files["metrics"].read_text(encoding="utf-8"))
    assert figures["rows"]["lora"]["memorised"] == 1.0 and figures["held_out_replies"] == 30
    import pyarrow.parquet as pq

    replies = pq.read_table(files["replies"]).to_pylist()
    assert len(replies) == 5 * 30
    assert {r["memorised"] for r in replies if r["source"] == "lora"} == {"exact"}
    assert re.match(r"likeness to Sam on 30 held-out replies — said by Sam: real (9\d|100)%, others \d%, base \d%, SFT (9\d|100)%, "
                    r"LoRA (9\d|100)%; "
                    r"C2ST AUC \(memorised left out\): base 1.00 \(1.00\), SFT 0.50 \(0.50\), LoRA [\d.]+ \(n/a\); "
                    r"memorised: real 0%, base 0%, SFT 0%, LoRA 100%$", result.summary()), result.summary()
