"""Cleaning rules: what each one removes (in several languages), what it must leave alone, and that cleaning is
idempotent and keeps emoji sequences."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tasks.cleaning import RULES, CleanRules, clean_text, clean_text_plainly
from tasks.whatsapp import phrases as whatsapp_phrases
from tasks.whatsapp.phrases import SYSTEM_EVENT_WORDS, SYSTEM_EVENTS

ROOT = Path(__file__).resolve().parents[2]
WHATSAPP = ROOT / ".." / "shared" / "data" / "whatsapp"

ALL_ON = CleanRules()


def clean(text: str, **switches: bool) -> str:
    return clean_text(text, CleanRules(**switches))[0]


def only(rule: str) -> CleanRules:
    """Every rule off except `rule` (and whitespace, so results are easy to write down)."""
    return CleanRules(**{name: name in (rule, "whitespace") for name, _ in RULES})


def apply_only(rule: str, text: str) -> str:
    return clean_text(text, only(rule))[0]


# --- the interface the clean stage relies on ---------------------------------------------------------------


def test_every_rule_is_a_switch_named_like_its_function():
    assert [name for name, _ in RULES] == list(CleanRules.model_fields)
    for name, function in RULES:
        assert function.__name__ == f"_rule_{name}"
        assert CleanRules.model_fields[name].default is True


def test_unknown_rule_names_are_an_error():
    with pytest.raises(ValidationError):
        CleanRules(remove_links=True)


def test_counts_say_which_rules_changed_the_text():
    text, fired = clean_text("See https://example.com\u200e  now", ALL_ON)
    assert text == "See now"
    assert fired == {"links": 1, "bidi_chars": 1, "whitespace": 1}
    assert clean_text("Nothing to do here.", ALL_ON) == ("Nothing to do here.", {})


def test_a_text_that_was_only_junk_becomes_empty():
    assert clean_text("<Media omitted>", ALL_ON)[0] == ""
    assert clean_text("https://example.com/a\n\nwww.example.org", ALL_ON)[0] == ""
    # even with whitespace off, an emptied text is "" (the stage counts it as dropped)
    assert clean("  <Media omitted>\n", whitespace=False) == ""


# --- links -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Read https://example.com/a?b=1&c=2#top for more", "Read for more"),
        ("Voir http://exemple.fr/page.html.", "Voir ."),
        ("Mira www.ejemplo.es/articulo, es bueno", "Mira , es bueno"),
        ("bookmarks: example.org and shop.example.co.uk/cart", "bookmarks: and"),
        ("Schau auf beispiel.de/seite nach", "Schau auf nach"),
        ("(see https://en.example.org/wiki/Page)", "(see )"),
        ("ftp://files.example.net/pub/file.tar.gz", ""),
        ("WWW.EXAMPLE.COM is shouting", "is shouting"),
    ],
)
def test_links_are_removed(text, expected):
    assert apply_only("links", text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "e.g. this, i.e. that, etc. and a.m. or p.m.",
        "Version 3.5 is faster than 1.2.3 and costs 4.99.",
        "The U.S. and the U.K. signed it.",
        "Run script.py, open README.md, then Node.js and ASP.NET.",
        "It ended.It was late.so we left",
        "Le prix est de 12,50 € et il est 12:30.",
        "St.Louis and Mr.Smith",
    ],
)
def test_links_leave_ordinary_prose_alone(text):
    assert apply_only("links", text) == text


# --- e-mails -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Write to jo.marsh@example.com today", "Write to today"),
        ("Écrivez à josé.garcía@exemple.fr.", "Écrivez à ."),
        ("<mailto:first+tag@sub.example.org>", "<>"),
        ("كاتبني على salma_93@example.ma", "كاتبني على"),
    ],
)
def test_emails_are_removed(text, expected):
    assert apply_only("emails", text) == expected


def test_emails_leave_at_signs_in_prose():
    text = "Meet me @ 5, price 3 @ 2€, user@localhost is not an address"
    assert apply_only("emails", text) == text


# --- phone numbers -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "number",
    [
        "+33 6 12 34 56 78",
        "+212 6 12-345678",
        "+1 (555) 013-2847",
        "+44 20 7946 0958",
        "+49 171 1234567",
        "+971 50 123 4567",
        "0044 20 7946 0958",
        "06 12 34 56 78",
        "06.12.34.56.78",
        "0612345678",
        "(555) 013-2847",
        "555-013-2847",
        "1-800-555-0199",
        "020 7946 0958",
        "0171 1234567",
        "030/1234567",
        "+33\u00a06\u00a012\u00a034\u00a056\u00a078",
    ],
)
def test_phone_numbers_are_removed(number):
    assert apply_only("phone_numbers", f"Call {number} now.") == "Call now."


@pytest.mark.parametrize(
    "text",
    [
        "On 12/05/2021 at 12:30, or 2021-05-12 at 08:45:10.",
        "Le 05.12.2021 à 06:30, il a payé 1 234,56 € (soit 1234.56 EUR).",
        "It cost $1,234.56 in 2019 and 2020; pi is 3.14159265.",
        "Years 1999 2000 2001 2002, population 100000000, call 911 or 112.",
        "ISBN 978-3-16-148410-0, score 12-10, room 0.5 m2, +3.5% growth, +12 points",
        "Le match a fini 2 à 1 le 14/07 à 21h00.",
        "Science, ISSN 0036-8075; order 000046056155; serial 0022-2860.",
    ],
)
def test_phone_numbers_leave_dates_prices_and_numbers(text):
    assert apply_only("phone_numbers", text) == text


# --- WhatsApp placeholders and markers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "placeholder",
    [
        "<Media omitted>",
        "<media omitted>",
        "<Médias omis>",
        "‹Médias omis›",
        "<Multimedia omitido>",
        "<Mídia oculta>",
        "<Medien ausgeschlossen>",
        "<Media omessi>",
        "<Media weggelaten>",
        "<Medya dahil edilmedi>",
        "<تم استبعاد الوسائط>",
        "<Media tidak disertakan>",
        "<attached: 00000012-PHOTO-2020-01-01-12-00-00.jpg>",
        "<pièce jointe : 00000003-AUDIO-2021-03-02-10-00-00.opus>",
        "<adjunto: 00000001-PHOTO-2022-05-05-18-20-00.jpg>",
        "<allegato: 00000015-PHOTO-2018-04-17-16-10-02.jpg>",
        "IMG-20200101-WA0001.jpg (file attached)",
        "PTT-20180620-WA0017.opus (file allegato)",
        "VID-20181031-WA0007.mp4 (Datei angehängt)",
        "DOC-20230101-WA0002.pdf (fichier joint)",
        "STK-20220202-WA0003.webp (archivo adjunto)",
    ],
)
def test_media_placeholders_of_every_locale_are_removed(placeholder):
    text = f"Ana: {placeholder}\nAna: and then?"
    assert apply_only("media_placeholders", text) == "Ana:\nAna: and then?"


@pytest.mark.parametrize(
    "bare", ["image omitted", "video omitted", "sticker omitted", "imagen omitida", "GIF omessa"]
)
def test_bare_ios_placeholders_go_only_when_they_are_the_whole_message(bare):
    assert (
        apply_only("media_placeholders", f"[1/2/24, 10:00:00] Bob: {bare}\nhi")
        == "[1/2/24, 10:00:00] Bob:\nhi"
    )
    assert apply_only("media_placeholders", f"{bare}\nhi") == "hi"
    prose = f"The {bare} from the report was odd."
    assert apply_only("media_placeholders", prose) == prose


def test_a_file_name_with_spaces_is_removed_with_its_attachment_note():
    text = "16.02.21, 23:18 - John: Max Caulfield.vcf (Datei angehängt)\nDanke"
    assert apply_only("media_placeholders", text) == "16.02.21, 23:18 - John:\nDanke"


@pytest.mark.parametrize(
    "marker",
    [
        "This message was deleted",
        "You deleted this message",
        "Ce message a été supprimé",
        "Vous avez supprimé ce message",
        "Se eliminó este mensaje",
        "Esta mensagem foi apagada",
        "Diese Nachricht wurde gelöscht",
        "Questo messaggio è stato eliminato",
        "Dit bericht is verwijderd",
        "Bu mesaj silindi",
        "تم حذف هذه الرسالة",
        "Pesan ini telah dihapus",
    ],
)
def test_deleted_message_markers_are_removed(marker):
    assert apply_only("deleted_edited_markers", f"{marker}\nStill here") == "Still here"
    assert apply_only("deleted_edited_markers", f"Sam: {marker}.") == "Sam:"


@pytest.mark.parametrize(
    "marker",
    [
        "<This message was edited>",
        "<Ce message a été modifié>",
        "<Se editó este mensaje.>",
        "<Diese Nachricht wurde bearbeitet>",
        "<Questo messaggio è stato modificato>",
        "<Dit bericht is bewerkt>",
    ],
)
def test_edited_markers_are_removed_and_the_message_kept(marker):
    assert apply_only("deleted_edited_markers", f"See you at 8 {marker}") == "See you at 8"


def test_deleted_marker_inside_a_sentence_is_prose():
    text = "This message was deleted by mistake, sorry about that"
    assert apply_only("deleted_edited_markers", text) == text


# --- mentions ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@Bob are you coming?", "are you coming?"),
        ("Merci @Léa_Martin !", "Merci !"),
        ("@\u2068Maria José\u2069 ¿vienes?", "¿vienes?"),
        ("@+212 6 12 34 56 78 wach nta hna?", "wach nta hna?"),
        ("@212612345678 ok", "ok"),
        ("@33612345678\u00a0merci", "merci"),
        ("cc @\u200eSam", "cc"),
    ],
)
def test_mentions_are_removed(text, expected):
    assert apply_only("mentions", text) == expected


def test_mentions_leave_addresses_and_lone_at_signs():
    text = "mail bob@example.com, see you @ 5, https://social.example/@alice/1 and 2@3, reply @14028 12 votes"
    assert apply_only("mentions", text) == text


# --- system messages -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or "
        "listen to them. Tap to learn more.",
        "12/07/2017, 22:35 - Messages to this group are now secured with end-to-end encryption. Tap for more info.",
        "Les messages et les appels sont chiffrés de bout en bout. Aucun tiers, pas même WhatsApp, ne peut les lire.",
        "[17/04/18, 16:02:30] Bianca 😂: I messaggi inviati a questa chat e le chiamate sono ora protetti con la "
        "crittografia end-to-end.",
        '12/24/14, 17:08 - +12 345 578 created group "Groupname"',
        "[20.06.19, 15:58:47] Loris created group “WhatsApp Chat Parser Example”",
        "You created group “Sample Group”",
        "12/24/14, 17:08 - You were added",
        "Loris added Emily",
        "Loris added you",
        "Nadia added Omar, Sara and +33 6 12 34 56 78",
        "Alice left",
        "~ Kim removed Lee",
        "Tom joined using this group's invite link",
        'Ana changed the subject from "Trip" to "Trip 2024"',
        "Ana changed this group's icon",
        "Missed voice call",
        "Marie a créé le groupe « Famille »",
        "Vous avez créé le groupe « Vacances »",
        "Marie a ajouté Paul et Léa",
        "Paul vous a ajouté",
        "Paul est parti",
        "Vous avez quitté le groupe",
        "Marie a retiré Paul",
        "Marie a modifié le sujet de « Amis » en « Amis 2024 »",
        "Léa a rejoint ce groupe via le lien d'invitation",
        "Appel vocal manqué",
    ],
)
def test_system_message_lines_are_removed(line):
    assert apply_only("system_messages", f"Before\n{line}\nAfter") == "Before\nAfter"


@pytest.mark.parametrize(
    "line",
    [
        'Juan creó el grupo "Viaje"',
        "Juan añadió a Ana y Pablo",
        "Juan te añadió",
        "Ana salió",
        'Juan cambió el asunto de "Viaje" a "Viaje 2024"',
        "Llamada perdida",
        "Videollamada perdida",
        'João criou o grupo "Família"',
        "João adicionou Maria e Pedro",
        "Maria saiu",
        "João removeu você",
        "Chamada de voz perdida",
        "Anna hat die Gruppe „Familie“ erstellt",
        "Anna hat Ben und Lena hinzugefügt",
        "Ben hat die Gruppe verlassen",
        "Anna hat dich entfernt",
        "Verpasster Sprachanruf",
        'Marco ha creato il gruppo "Amici"',
        "Marco ha aggiunto Giulia",
        "Giulia è uscita",
        "Chiamata vocale persa",
        'Jan heeft groep "Zeilen" aangemaakt',
        "Jan heeft Piet toegevoegd",
        "Piet heeft de groep verlaten",
        "Gemiste spraakoproep",
        'Ali "Aile" grubunu oluşturdu',
        "Ali, Şule kişisini ekledi",
        "İbrahim ayrıldı",
        "Cevapsız sesli arama",
        'Budi membuat grup "Keluarga"',
        "15/03/23 22.31 - Budi menambahkan Siti",
        "Siti keluar",
        "Panggilan suara tak terjawab",
        'أنشأ أحمد المجموعة "العائلة"',
        "أضاف أحمد سارة",
        "غادر +212 661-234567",
        "مكالمة صوتية فائتة",
    ],
)
def test_system_message_lines_in_other_languages_are_removed(line):
    assert apply_only("system_messages", f"Before\n{line}\nAfter") == "Before\nAfter"


@pytest.mark.parametrize(
    "text",
    ["El perro salió", "Juan salió tarde hoy", "Sam: Siti keluar", "ayer Ana salió", "أحمد: غادر أحمد"],
)
def test_system_messages_in_other_languages_leave_ordinary_sentences(text):
    assert apply_only("system_messages", text) == text


def _whatsapp_phrases(*tables) -> list[str]:
    return [phrase for table in tables for phrases in table.values() for phrase in phrases]


@pytest.mark.parametrize(
    "phrase", _whatsapp_phrases(whatsapp_phrases.MEDIA_OMITTED, whatsapp_phrases.DELETED)
)
def test_every_placeholder_the_whatsapp_parser_knows_is_removed(phrase):
    assert clean(f"Sam: {phrase}\nSam: still here") == "Sam:\nSam: still here"


@pytest.mark.parametrize("marker", _whatsapp_phrases(whatsapp_phrases.EDITED_MARKERS))
def test_every_edited_marker_the_whatsapp_parser_knows_is_removed(marker):
    assert clean(f"see you at 8 <{marker}>") == "see you at 8"


def test_every_system_event_contains_one_of_its_hint_words():
    # lines are only tried when they contain a hint word, so a template without one could never match
    for template in SYSTEM_EVENTS:
        assert any(word in template.lower() for word in SYSTEM_EVENT_WORDS), template


@pytest.mark.parametrize(
    "text",
    [
        "He left",
        "She left the keys on the table",
        "I added salt and pepper",
        "We changed the subject to the weather",
        "Il est parti tôt ce matin",
        "Elle a ajouté du sel",
        "Bob: Alice left",
        "End-to-end tests are slow",
    ],
)
def test_system_messages_leave_ordinary_sentences(text):
    assert apply_only("system_messages", text) == text


# --- characters ----------------------------------------------------------------------------------------------


def test_control_characters_go_and_line_breaks_are_unified():
    assert apply_only("control_chars", "a\x00b\x07c\r\nd\re\u2028f\tg\x85h") == "abc\nd\ne\nf g\nh"
    assert clean("a\x00b\tc", control_chars=True, whitespace=False) == "ab\tc"


def test_bidi_and_format_characters_go():
    text = "\ufeff\u200eHello\u200f \u202aworld\u202c \u2066x\u2069 soft\u00adhyphen zero\u200bwidth"
    assert apply_only("bidi_chars", text) == "Hello world x softhyphen zerowidth"


@pytest.mark.parametrize(
    "emoji",
    [
        "👨\u200d👩\u200d👧\u200d👦",
        "🏳️\u200d🌈",
        "👩🏽\u200d💻",
        "🧑\u200d🤝\u200d🧑",
        "👁️\u200d🗨️",
        "❤️\u200d🔥",
    ],
)
def test_zwj_emoji_sequences_survive_every_rule(emoji):
    text = f"family {emoji} time\u200e"
    out = clean(text)
    assert emoji in out
    assert out == f"family {emoji} time"


def test_stray_zero_width_joiners_go():
    assert apply_only("bidi_chars", "\u200dstart mid\u200d\u200ddle end\u200d") == "start middle end"
    # between non-ASCII letters it can shape a script (Devanagari, Arabic…), so it stays
    assert apply_only("bidi_chars", "क्\u200dष") == "क्\u200dष"


def test_unicode_nfc():
    assert apply_only("unicode_nfc", "Cafe\u0301 de\u0301ja\u0300") == "Café déjà"


def test_whitespace():
    text = "  two  spaces\u00a0and\u202fnbsp\t\ttabs  \n\n\n\n  next paragraph \n"
    assert apply_only("whitespace", text) == "two spaces and nbsp tabs\n\nnext paragraph"


# --- switching rules off -------------------------------------------------------------------------------------

MIXED = (
    "12/24/14, 17:08 - Alice left\n"
    "Bob: <Media omitted>\n"
    "Bob: This message was deleted\n"
    "Carl: @Dana see https://example.com or mail carl@example.com, tel +33 6 12 34 56 78\u200e\x07\n"
    "Carl: Cafe\u0301   done"
)


@pytest.mark.parametrize(
    ("rule", "survivor"),
    [
        ("system_messages", "Alice left"),
        ("media_placeholders", "<Media omitted>"),
        ("deleted_edited_markers", "This message was deleted"),
        ("mentions", "@Dana"),
        ("links", "https://example.com"),
        ("emails", "carl@example.com"),
        ("phone_numbers", "+33 6 12 34 56 78"),
        ("bidi_chars", "\u200e"),
        ("control_chars", "\x07"),
        ("unicode_nfc", "Cafe\u0301"),
        ("whitespace", "   done"),
    ],
)
def test_turning_a_rule_off_keeps_what_it_removes(rule, survivor):
    assert survivor not in clean(MIXED)
    assert survivor in clean(MIXED, **{rule: False})


def test_all_rules_on_the_mixed_chat():
    assert clean(MIXED) == "Bob:\nBob:\nCarl: see or mail , tel\nCarl: Café done"


# --- real exports --------------------------------------------------------------------------------------------

needs_whatsapp = pytest.mark.skipif(
    not WHATSAPP.is_dir(),
    reason=f"shared WhatsApp test data not found at {WHATSAPP} (it lives outside the repository)",
)


@needs_whatsapp
def test_real_ios_export_loses_placeholders_and_system_lines_but_keeps_messages():
    raw = (WHATSAPP / "whatsapp-chat-parser-website_example_chat.txt").read_bytes().decode("utf-8")
    out = clean(raw)
    for gone in ("<attached:", "end-to-end encryption", "Loris added Emily", "created group", "\r"):
        assert gone in raw and gone not in out
    for kept in (
        "Loris: Welcome to the chat example!",
        "don't be so mysterious and show us!",
        "John: Really?",
    ):
        assert kept in out


@needs_whatsapp
def test_real_android_exports_in_three_languages():
    english = clean((WHATSAPP / "rwhatsapp_sample.txt").read_text(encoding="utf-8"))
    assert "<Media omitted>" not in english and "secured with end-to-end" not in english
    assert 'created group "Tes"' not in english
    assert "Johannes Gruber: Fruit bread with cheddar ☺👌🏻" in english
    assert "👨\u200d👩\u200d👧\u200d👦" in english  # ZWJ family emoji kept
    german = clean(
        (WHATSAPP / "whatsapp-to-sqlite_WhatsApp Chat mit Jane Doe.txt").read_text(encoding="utf-8")
    )
    assert "(Datei angehängt)" not in german and "Ende-zu-Ende" not in german
    assert "Das hier meine ich" in german and "Max Caulfield" not in german
    raw_italian = (WHATSAPP / "whatsapp-exported-chat-reader_sample-android.txt").read_text(encoding="utf-8")
    italian = clean(raw_italian)
    assert "\u200ePTT-20180620-WA0017.opus (file allegato)" in raw_italian
    assert "(file allegato)" not in italian and ".opus" not in italian and "\u200e" not in italian


# --- idempotence ---------------------------------------------------------------------------------------------

FRAGMENTS = [
    "hello",
    "Bonjour à tous",
    "¿qué tal?",
    "مرحبا",
    "नमस्ते",
    "e.g.",
    "3.5",
    "12:30",
    "2024-05-12",
    "1 234,56 €",
    "https://example.com/a_(b)",
    "www.example.org",
    "example.net/x",
    "jo@example.com",
    "mailto:",
    "@Bob",
    "@",
    "\u2068Ana Lu\u2069",
    "+33 6 12 34 56 78",
    "06 12 34 56 78",
    "555-013-2847",
    "<Media omitted>",
    "‹Médias omis›",
    "<attached: 0001-PHOTO.jpg>",
    "IMG-1.jpg (file attached)",
    "image omitted",
    "This message was deleted",
    "<This message was edited>",
    "Alice left",
    "Loris added Emily",
    "You were added",
    "Messages and calls are end-to-end encrypted.",
    "Bob:",
    "[1/2/24, 10:00:00] Bob:",
    "12/24/14, 17:08 -",
    "👨\u200d👩\u200d👧",
    "\u200d",
    "\u200e",
    "\u2069",
    "\ufeff",
    "\x07",
    "\r",
    "e\u0301",
    "\u0301",
    "<",
    ">",
    "(",
    ")",
    ".",
    ",",
    ":",
    "-",
    "+",
    "0",
    "00",
    "www.",
    "http://",
]
SEPARATORS = ["", " ", "  ", "\n", "\n\n\n", "\t", ": ", "\u00a0"]


@st.composite
def chat_like_text(draw) -> str:
    parts = draw(
        st.lists(
            st.tuples(st.sampled_from(FRAGMENTS) | st.text(max_size=6), st.sampled_from(SEPARATORS)),
            max_size=14,
        )
    )
    return "".join(fragment + sep for fragment, sep in parts)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_like_text())
def test_cleaning_is_idempotent(text):
    once = clean(text)
    assert clean(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_cleaning_arbitrary_unicode_is_idempotent(text):
    once = clean(text)
    assert clean(once) == once


RULE_SETS = [ALL_ON, *(CleanRules(**{name: name != off for name, _ in RULES}) for off, _ in RULES)]

# Lines of a few known fragments: removing one often leaves a line that a later pass removes too
# ("+33 6 12 34 56 78 You were added" -> "You were added" -> "").
chat_lines = st.lists(
    st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS)), min_size=1, max_size=4).map(
        lambda parts: "".join(fragment + sep for fragment, sep in parts)
    ),
    min_size=1,
    max_size=8,
).map("\n".join)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+33 6 12 34 56 78 You were added\n", ""),
        ("hi\nThis message was deleted\t06 12 34 56 78 \nbye", "hi\nbye"),
        ("image omitted  +33 6 12 34 56 78\n\n\nwww.\n\n\nhello\n", "www.\n\nhello"),
        ("<Media omitted>\n\n\n<Media omitted> \ufeff  Alice left\n", ""),
    ],
)
def test_lines_that_a_removal_leaves_as_junk_go_too(text, expected):
    assert clean(text) == expected


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_lines | chat_like_text(), st.sampled_from(RULE_SETS))
def test_fast_cleaning_matches_running_every_pass_on_the_whole_text(text, rules):
    # clean_text re-cleans only the lines a pass changed; the result and the fired rules must be what running
    # every pass over the whole text gives.
    assert clean_text(text, rules) == clean_text_plainly(text, rules)
