"""Reading the HTML form of Meta's "Download your information" of Messenger and Instagram chats (the download's
default format: `messages/inbox/<name>_<id>/message_1.html`, `message_2.html`…) into the chats `tasks.messenger`
reads from the JSON form; `tasks.messenger` routes a `message_N.html` here.

The markup (facts from the fixtures and notes of public parsers, read for facts only: a Messenger/Instagram
analyser's "Instagram Messages Schema" notes with real files' blocks, the class lists of several message.html
scrapers, test fixtures of Instagram-export readers): a page per part, its `<title>` the chat's name (also in a
header `<div class="_3b0d">`, `<div class="_a70e">` or `<h1>`), and an element with `role="main"` (`_4t5n`,
`_a706`, a `<main>`) whose children are one block per message, newest first (`pam _3-95 … uiBoxWhite noborder`),
each of three elements: the sender (`_3-96 _2pio _2lek _2lel` until 2021, `_3-95 _2pim _a6-h _a6-i` since, a
`<div>`, since 2023 an `<h2>`), the content (`_3-96 _2let`, `_3-95 _a6-p`) and the date (`_3-94 _2lem`,
`_3-94 _a6-o`). Inside the content: the text, the media (`<img>`, `<video>`, `<audio>`, `<a href>` to the file,
by the folder of the export it lies in: `photos/`, `videos/`, `gifs/`, `audio/`, `files/`, `stickers_used/`), a
shared link (`<a href="https://…">`) and the reactions as a list (`<ul class="_tqp">`, `<ul class="_a6-q">`). A
block without a date is the page's header: a group's "Participants: A, B and C" (English only), "Mailbox thread
pending". The blocks are told by that structure, not by the class names, so that every era reads.

A message is read as the JSON record it stands for and goes through the JSON reader's rules (`tasks.messenger`):
the same kinds, placeholders ("image omitted"…), events, reactions notices skipped, a link on its own line after
the text; "<name> unsent a message." (Messenger's English wording of an unsent message) is "deleted". Reactions
are not messages. The dates are in the account's language: English ("Mar 14, 2024 6:02:05 pm", "Sep 22, 2017,
6:33 AM", "01 Jan 2020, 09:59"); the month names of French, German, Spanish, Italian, Portuguese, Dutch, Polish,
Turkish, Indonesian, Swedish, Danish, Norwegian, Finnish, Czech, Romanian, Hungarian, Russian, Ukrainian and Arabic,
abbreviated with or without the dot, in the genitive or partitive a date takes ("14 marca 2024 18:02", "14.
maaliskuuta 2024 klo 18.02", "2024. márc. 14. 18:02", "14 марта 2024 г. в 18:02"); the year-first dates of
Japanese, Chinese and Korean ("2024年3月14日 18:02", "2024년 3월 14일 오후 6:02"); and numeric forms ("2024-03-14
18:02", "14/03/2024 18:02", whose day/month order is taken from the conversation's dates where one has a day above
12). The time may be written "18.02", and on a 12-hour clock with its marker after it ("pm", "p. m.", Arabic "م") or
before it ("午後", "下午", "오후"). A date may name its weekday, full or abbreviated, in any of these languages
("sobota, 28 listopada 2026 10:51", "sábado, 28 de noviembre de 2026, 10:51", "2024. március 14., csütörtök
18:02", "2024年3月14日(木)"), and the day it names must be the date's. The names and markers are the Unicode CLDR's
for each language (no page of a non-English download was found to quote), in tables in which no name means two
months and no weekday's name is another date word (a few are left out for it: `_WEEKDAY_NAMES`). Dates are read as
the wall-clock time the page shows (the file does not say its zone; `tz` is not applied), to the second where the
page shows seconds (`exact_timestamps` False where it does not). A date that does not read (another language's
month, a numeric one whose order nothing tells, a weekday not the date's) is a skipped record
(`messenger_bad_timestamp`) with the file and the message's position, never a guessed time.

Not read, as the HTML does not carry it or its wording is unknown: `thread_path` (the chat's own id is its folder,
"inbox/<name>_<id>", what `thread_path` holds), `is_still_participant`, a one-to-one chat's participants, calls'
durations, the events and the unsent wording in other languages than the JSON reader knows, the time zone.

A file cut short (no `</html>` at its end) keeps its messages but the last block before the cut (which may be cut
itself), counted once as `messenger_truncated_export`. A file that gives no message block, is not UTF-8 or is no
such page is refused in one line naming it and saying how to get the JSON form.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from resiliparse.parse.html import HTMLTree, NodeType

from tasks.chat_records import (
    DYI_MEDIA_KEYS,
    MEDIA_BY_EXTENSION,
    ChatSkips,
    ExportArchive,
    SourceMessage,
    build_chat,
    chat_id_for,
    combined_sha256,
    html_children,
    html_elements,
    read_export_bytes,
)
from tasks.records import InputFileError, SkipCounter, without_surrogates
from tasks.whatsapp.parser import WhatsAppChat

log = logging.getLogger(__name__)

HTML_PART = re.compile(r"^message_(\d+)\.html?$", re.IGNORECASE)
HOW_TO_GET_JSON = 'download it again as JSON: in "Download your information", choose Format: JSON'
# the DYI pages' class names (any era), and `role="main"`: what tells one of its pages from any other HTML
_MARKUP = re.compile(r'uiBoxWhite|_2lel|_2let|_2lem|_a6-g|_a6-h|_a6-p|_a6-o|_a706|_4t5n|role="main"')
# the folders a conversation lies in below `messages/`: its id is "<box>/<folder>", as the JSON's `thread_path`
_BOXES = {"inbox", "archived_threads", "filtered_threads", "message_requests", "e2ee_cutover", "ai_conversations"}
_MEDIA_TAGS = ("img", "video", "audio", "source")
_BLOCK_TAGS = {"div", "p", "li", "h1", "h2", "h3", "table", "tr"}
# by the folder of the export a media file lies in, else by the element that shows it: the JSON record's key
_FOLDER_KEYS = {"photos": "photos", "videos": "videos", "gifs": "gifs", "audio": "audio_files", "files": "files",
                "stickers_used": "sticker"}
_TAG_KEYS = {"img": "photos", "video": "videos", "audio": "audio_files"}
_UNSENT = re.compile(r"(?:You |.+ )?unsent a message\.?", re.IGNORECASE)

# The month names a DYI page may write a date with, by the account's language: one string per month, January
# first, its spellings separated by spaces. They are the Unicode CLDR's month names (wide and abbreviated, and the
# forms a date takes where they differ: Polish, Czech, Russian and Ukrainian genitive "14 marca", Finnish partitive
# "14. maaliskuuta"), lower case and without the abbreviation's dot, which is no part of a token ("févr." reads as
# "févr"). `_month_table` merges them and refuses a spelling that two languages give different months (Croatian's
# "listopad" is October where Polish and Czech's is November: such a language would need to be told per file).
_MONTH_NAMES: dict[str, tuple[str, ...]] = {
    "en": ("jan january", "feb february", "mar march", "apr april", "may", "jun june", "jul july", "aug august",
           "sep sept september", "oct october", "nov november", "dec december"),
    "fr": ("janv janvier", "févr fevr février fevrier", "mars", "avr avril", "mai", "juin", "juil juillet",
           "août aout", "sept septembre", "oct octobre", "nov novembre", "déc décembre decembre"),
    "de": ("jan januar jän jänner", "feb februar", "mär märz", "apr april", "mai", "jun juni", "jul juli",
           "aug august", "sep sept september", "okt oktober", "nov november", "dez dezember"),
    "es": ("ene enero", "feb febrero", "mar marzo", "abr abril", "may mayo", "jun junio", "jul julio", "ago agosto",
           "sep sept septiembre", "oct octubre", "nov noviembre", "dic diciembre"),
    "it": ("gen gennaio", "feb febbraio", "mar marzo", "apr aprile", "mag maggio", "giu giugno", "lug luglio",
           "ago agosto", "set settembre", "ott ottobre", "nov novembre", "dic dicembre"),
    "pt": ("jan janeiro", "fev fevereiro", "mar março", "abr abril", "mai maio", "jun junho", "jul julho",
           "ago agosto", "set setembro", "out outubro", "nov novembro", "dez dezembro"),
    "nl": ("jan januari", "feb februari", "mrt maart", "apr april", "mei", "jun juni", "jul juli", "aug augustus",
           "sep sept september", "okt oktober", "nov november", "dec december"),
    "pl": ("sty stycznia styczeń", "lut lutego luty", "mar marca marzec", "kwi kwietnia kwiecień", "maj maja",
           "cze czerwca czerwiec", "lip lipca lipiec", "sie sierpnia sierpień", "wrz września wrzesień",
           "paź października październik", "lis listopada listopad", "gru grudnia grudzień"),
    "tr": ("oca ocak", "şub şubat", "mar mart", "nis nisan", "may mayıs", "haz haziran", "tem temmuz",
           "ağu ağustos", "eyl eylül", "eki ekim", "kas kasım", "ara aralık"),
    "id": ("jan januari", "feb februari", "mar maret", "apr april", "mei", "jun juni", "jul juli",
           "agu agt agustus", "sep september", "okt oktober", "nov november", "des desember"),
    "sv": ("jan januari", "feb februari", "mar mars", "apr april", "maj", "jun juni", "jul juli", "aug augusti",
           "sep sept september", "okt oktober", "nov november", "dec december"),
    "da": ("jan januar", "feb februar", "mar marts", "apr april", "maj", "jun juni", "jul juli", "aug august",
           "sep september", "okt oktober", "nov november", "dec december"),
    "nb": ("jan januar", "feb februar", "mar mars", "apr april", "mai", "jun juni", "jul juli", "aug august",
           "sep september", "okt oktober", "nov november", "des desember"),
    "fi": ("tammik tammikuuta tammikuu", "helmik helmikuuta helmikuu", "maalisk maaliskuuta maaliskuu",
           "huhtik huhtikuuta huhtikuu", "toukok toukokuuta toukokuu", "kesäk kesäkuuta kesäkuu",
           "heinäk heinäkuuta heinäkuu", "elok elokuuta elokuu", "syysk syyskuuta syyskuu",
           "lokak lokakuuta lokakuu", "marrask marraskuuta marraskuu", "jouluk joulukuuta joulukuu"),
    "cs": ("led ledna leden", "úno února únor", "bře března březen", "dub dubna duben", "kvě května květen",
           "čvn června červen", "čvc července červenec", "srp srpna srpen", "zář září", "říj října říjen",
           "lis listopadu listopad", "pro prosince prosinec"),
    "ro": ("ian ianuarie", "feb februarie", "mar martie", "apr aprilie", "mai", "iun iunie", "iul iulie",
           "aug august", "sept septembrie", "oct octombrie", "nov noiembrie", "dec decembrie"),
    "hu": ("jan január", "febr február", "márc március", "ápr április", "máj május", "jún június", "júl július",
           "aug augusztus", "szept szeptember", "okt október", "nov november", "dec december"),
    "ru": ("янв января январь", "фев февр февраля февраль", "мар марта март", "апр апреля апрель", "мая май",
           "июн июня июнь", "июл июля июль", "авг августа август", "сен сент сентября сентябрь",
           "окт октября октябрь", "ноя нояб ноября ноябрь", "дек декабря декабрь"),
    "uk": ("січ січня січень", "лют лютого лютий", "бер березня березень", "квіт квітня квітень",
           "трав травня травень", "черв червня червень", "лип липня липень", "серп серпня серпень",
           "вер вересня вересень", "жовт жовтня жовтень", "лист листопада листопад", "груд грудня грудень"),
    "ar": ("يناير", "فبراير", "مارس", "أبريل إبريل", "مايو", "يونيو", "يوليو", "أغسطس", "سبتمبر", "أكتوبر",
           "نوفمبر", "ديسمبر"),
}
# The weekday names a date may hold, by language: one string per day, Monday first, its spellings separated by
# spaces, as `_MONTH_NAMES`' are. They are the CLDR's, wide and abbreviated, format and stand-alone (Finnish's format
# "torstaina", stand-alone "torstai"; pt-PT's abbreviated "quinta" is the first word of pt's "quinta-feira", whose
# "feira" is a date word), and the day's character of ja "木曜日" "(木)", zh "星期四" "周四" (and the common "星期天")
# and ko "목요일" "(목)". A name that is also a date word is read as that word, its day not checked, and is left out
# here: fi "la" (es and ro "la"), hu "v" (cs "v"), ja and ko's Monday and Sunday (月 日, 월 일: month and day), zh's
# "日". "mar" is Tuesday in fr, es, it and ro and March in most: the month where the date needs it ("14 mar 2024"),
# the weekday where it has another month or three numbers ("mar., 14 mars 2024", "mar, 24/11/2026"). A name may mean
# two days ("so": Saturday in Czech, Sunday in German): either is the date's.
_WEEKDAY_NAMES: dict[str, tuple[str, ...]] = {
    "en": ("mon monday", "tue tuesday", "wed wednesday", "thu thursday", "fri friday", "sat saturday", "sun sunday"),
    "fr": ("lun lundi", "mar mardi", "mer mercredi", "jeu jeudi", "ven vendredi", "sam samedi", "dim dimanche"),
    "de": ("mo montag", "di dienstag", "mi mittwoch", "do donnerstag", "fr freitag", "sa samstag", "so sonntag"),
    "es": ("lun lunes", "mar martes", "mié miércoles", "jue jueves", "vie viernes", "sáb sábado", "dom domingo"),
    "it": ("lun lunedì", "mar martedì", "mer mercoledì", "gio giovedì", "ven venerdì", "sab sabato", "dom domenica"),
    "pt": ("seg segunda", "ter terça", "qua quarta", "qui quinta", "sex sexta", "sáb sábado", "dom domingo"),
    "nl": ("ma maandag", "di dinsdag", "wo woensdag", "do donderdag", "vr vrijdag", "za zaterdag", "zo zondag"),
    "pl": ("pon poniedziałek", "wt wtorek", "śr środa", "czw czwartek", "pt piątek", "sob sobota",
           "niedz niedziela"),
    "tr": ("pzt pazartesi", "sal salı", "çar çarşamba", "per perşembe", "cum cuma", "cmt cumartesi", "paz pazar"),
    "id": ("sen senin", "sel selasa", "rab rabu", "kam kamis", "jum jumat", "sab sabtu", "min minggu"),
    "sv": ("mån måndag", "tis tisdag", "ons onsdag", "tors torsdag", "fre fredag", "lör lördag", "sön söndag"),
    "da": ("man mandag", "tirs tirsdag", "ons onsdag", "tors torsdag", "fre fredag", "lør lørdag", "søn søndag"),
    "nb": ("man mandag", "tir tirsdag", "ons onsdag", "tor torsdag", "fre fredag", "lør lørdag", "søn søndag"),
    "fi": ("ma maanantai maanantaina", "ti tiistai tiistaina", "ke keskiviikko keskiviikkona",
           "to torstai torstaina", "pe perjantai perjantaina", "lauantai lauantaina", "su sunnuntai sunnuntaina"),
    "cs": ("po pondělí", "út úterý", "st středa", "čt čtvrtek", "pá pátek", "so sobota", "ne neděle"),
    "ro": ("lun luni", "mar marți", "mie miercuri", "joi", "vin vineri", "sâm sâmbătă", "dum duminică"),
    "hu": ("h hétfő", "k kedd", "sze szerda", "cs csütörtök", "p péntek", "szo szombat", "vasárnap"),
    "ru": ("пн понедельник", "вт вторник", "ср среда", "чт четверг", "пт пятница", "сб суббота", "вс воскресенье"),
    "uk": ("пн понеділок", "вт вівторок", "ср середа", "чт четвер", "пт пʼятниця", "сб субота", "нд неділя"),
    "ar": ("الاثنين", "الثلاثاء", "الأربعاء", "الخميس", "الجمعة", "السبت", "الأحد"),
    "ja": ("", "火", "水", "木", "金", "土", ""),
    "zh": ("一", "二", "三", "四", "五", "六", "天"),
    "ko": ("월요일", "화 화요일", "수 수요일", "목 목요일", "금 금요일", "토 토요일", "일요일"),
}
# Words a date may hold besides its numbers, month, weekday and clock, by language: "at" and its like ("à", "um",
# "alle", "às", "om", "kl.", "klo", "pukul", "v", "в", "о"), the year's "r." "г." "р.", pt's "feira" of
# "quinta-feira", and the characters of a year-first CJK date ("2024年3月14日(木)", "2024년 3월 14일"), read as year,
# month, day.
_DATE_WORDS: dict[str, str] = {
    "en": "at",
    "fr": "à le",
    "de": "um",
    "es": "de del a las la",
    "it": "alle ore",
    "pt": "de às feira",
    "nl": "om",
    "pl": "o r",
    "tr": "saat",
    "id": "pukul pkl",
    "sv": "kl klockan",
    "da": "kl klokken den",
    "nb": "kl klokken",
    "fi": "klo",
    "cs": "v ve",
    "ro": "la ora",
    "ru": "г года в",
    "uk": "р року о об",
    "ja zh": "年 月 日 曜 星 期 周 週",
    "ko": "년 월 일",
}
# The 12-hour clock's markers, written after the time ("6:02 pm", "6:02 p. m.", Arabic "٦:٠٢ م") or as the word
# right before it ("午後6:02", "下午6:02", "오후 6:02"); compared without dots, spaces and direction marks.
_HALF_DAY = {"a": "am 午前 上午 오전 ص", "p": "pm 午後 下午 오후 م"}


def _spellings(
    names: dict[str, tuple[str, ...]], count: int, what: str, words: set[str]
) -> Iterator[tuple[str, int, str]]:
    """(language, place from 0, spelling) of every name of `names`; ValueError where a language has not `count` of
    them, or where a spelling is also one of the date's other `words` (then a date could read two ways)."""
    for language, spellings in names.items():
        if len(spellings) != count:
            raise ValueError(f"{language}: {len(spellings)} {what}s, not {count}")
        for place, spelled in enumerate(spellings):
            for name in spelled.split():
                if name in words:
                    raise ValueError(f"{what} name {name!r} ({language}) is also a date word")
                yield language, place, name


def _month_table(names: dict[str, tuple[str, ...]], words: set[str]) -> dict[str, int]:
    """Every spelling of `names` to its month; ValueError where two languages give a spelling different months, or
    where a spelling is also one of the date's other `words`."""
    months: dict[str, int] = {}
    for language, place, name in _spellings(names, 12, "month", words):
        if months.setdefault(name, place + 1) != place + 1:
            raise ValueError(f"month name {name!r} ({language}) is month {place + 1} and month {months[name]}")
    return months


def _weekday_table(names: dict[str, tuple[str, ...]], words: set[str]) -> dict[str, frozenset[int]]:
    """Every spelling of `names` to the days it may mean (Monday 0); ValueError where a spelling is also one of the
    date's other `words` (then a date's "la" or "v" would be checked as a day)."""
    days: dict[str, set[int]] = {}
    for _, day, name in _spellings(names, 7, "weekday", words):
        days.setdefault(name, set()).add(day)
    return {name: frozenset(day) for name, day in days.items()}


_WORDS = {word for words in _DATE_WORDS.values() for word in words.split()}
_MONTHS = _month_table(_MONTH_NAMES, _WORDS)
_WEEKDAYS = _weekday_table(_WEEKDAY_NAMES, _WORDS)
_HALVES = {marker: half for half, markers in _HALF_DAY.items() for marker in markers.split()}
# the time at the end of a date: hour, minute, seconds (":" or "." between them: "18.02" in Danish, Finnish,
# Indonesian) and what follows it, a 12-hour marker or nothing
_CLOCK = re.compile(r"(?<!\d)(\d{1,2})[:.](\d{2})(?:[:.](\d{2}))?(?:\s*([^\d\s:.][^\d]*?))?\s*$")
_MARKER_NOISE = str.maketrans("", "", ". \u00a0\u202f\u200e\u200f\u061c")
_HAN = "\u3400-\u4dbf\u4e00-\u9fff"
# a date's numbers and words; a Han character is a word of its own ("14日下午" is 14, 日, 下午), but for a marker
_TOKEN = re.compile("|".join([r"\d+", *(m for m in _HALVES if re.fullmatch(f"[{_HAN}]+", m)), f"[{_HAN}]",
                              rf"[^\W\d_{_HAN}]+"]))
_ASCII_TOKEN = re.compile(r"\d+|[^\W\d_]+")  # _TOKEN on ASCII text, where no Han alternative can match


def looks_like_messenger_html(path, head_bytes: int = 65536) -> bool:
    """Cheap sniff for input-kind detection: a `message_N.html` that is a page of Meta's HTML download (its markup,
    or an HTML page in the download's layout, `messages/<box>/<chat>/`)."""
    path = Path(path)
    if not HTML_PART.match(path.name):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(head_bytes)
    except OSError:
        return False
    return messenger_html_head(head, path)


def messenger_html_head(data: bytes, path: Path) -> bool:
    """Whether the first bytes of a `message_N.html` at `path` are a page of Meta's HTML download."""
    if not HTML_PART.match(path.name):
        return False
    head = data.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if not head[:200].lower().startswith(("<!doctype html", "<html")):
        return False
    in_layout = len(path.parts) >= 3 and path.parts[-3].lower() in _BOXES
    return in_layout or _MARKUP.search(head) is not None


# ---------------------------------------------------------------------------------------------------------- dates


def _clock_and_fields(raw: str) -> tuple[tuple[int, int, int, str | None], list[str]] | None:
    """The clock (hour, minute, second, "a"/"p"/None) at the end of a date and the date's tokens before it (a 12-hour
    marker written before the time left out); None where there is no clock or what follows it is no marker."""
    text = raw.strip()
    clock = _CLOCK.search(text)
    if clock is None:
        return None
    hour, minute, second, after = clock.groups()
    half = None
    if after is not None:
        half = _HALVES.get(after.lower()) or _HALVES.get(after.translate(_MARKER_NOISE).lower())
        if half is None:
            return None
    tokens = (_ASCII_TOKEN if text.isascii() else _TOKEN).findall(text[:clock.start()].lower())
    if tokens and tokens[-1] in _HALVES:
        if half is not None:
            return None
        half = _HALVES[tokens.pop()]
    return (int(hour), int(minute), int(second or 0), half), tokens


def read_html_date(raw: str, day_first: bool | None = None) -> datetime | None:
    """The time a DYI page writes as `raw` ("Mar 14, 2024 6:02:05 pm", "sobota, 28 listopada 2026 10:51",
    "2024年3月14日 18:02", "2024-03-14 18:02"), None when it does not read or names a weekday not its date's. A
    numeric day/month date ("03/04/2024") reads only with `day_first` told, or where one of its numbers is above 12."""
    found = _clock_and_fields(raw)
    if found is None:
        return None
    (hour, minute, second, half), tokens = found
    if half is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "p" else 0)
    numbers, months, weekdays = [], [], []
    for token in tokens:
        if token.isdigit():
            numbers.append(token)
        elif token in _MONTHS:
            months.append(token)
        elif token in _WEEKDAYS:
            weekdays.append(token)
        elif token not in _WORDS:
            return None
    # a month name that is also a weekday's, beside another month or three numbers, is the weekday ("mar., 14 mars
    # 2024", "mar, 24/11/2026")
    if len(months) == 2 or months and len(numbers) == 3:
        named = {m for m in months if m in _WEEKDAYS}
        if len(named) != 1:
            return None
        weekdays.append(named.pop())
        months.remove(weekdays[-1])
    try:
        time = _date_of(numbers, months, day_first, hour, minute, second)
    except ValueError:
        return None
    if time is None or any(time.weekday() not in _WEEKDAYS[w] for w in weekdays):  # a weekday not the date's
        return None
    return time


def _date_of(numbers: list[str], months: list[str], day_first: bool | None, hour: int, minute: int,
             second: int) -> datetime | None:
    """The time a date's numbers and month name (none, or one) give; None where they do not tell one, ValueError
    where they tell none that is (a 32nd day, a 13th month)."""
    if len(months) > 1:
        return None
    if months:
        if len(numbers) != 2 or not any(len(n) == 4 for n in numbers):
            return None
        year, day = (int(numbers[0]), int(numbers[1])) if len(numbers[0]) == 4 else (int(numbers[1]),
                                                                                     int(numbers[0]))
        return datetime(year, _MONTHS[months[0]], day, hour, minute, second)
    if len(numbers) != 3:
        return None
    if len(numbers[0]) == 4:
        return datetime(int(numbers[0]), int(numbers[1]), int(numbers[2]), hour, minute, second)
    if len(numbers[2]) != 4:
        return None
    a, b, year = map(int, numbers)
    if day_first is None:
        day_first = True if a > 12 else False if b > 12 else None
    if day_first is None:
        return None
    day, month = (a, b) if day_first else (b, a)
    return datetime(year, month, day, hour, minute, second)


def _day_first(raws: list[str]) -> bool | None:
    """The day/month order of a conversation's numeric dates: day first where one has a first number above 12, month
    first where one has a second number above 12, None where none tells (or they disagree)."""
    seen = set()
    for raw in raws:
        found = _clock_and_fields(raw)
        numbers = [t for t in found[1] if t.isdigit()] if found else []
        if len(numbers) == 3 and len(numbers[2]) == 4 and len(numbers) == len(found[1]):
            a, b = int(numbers[0]), int(numbers[1])
            if a > 12 >= b:
                seen.add(True)
            elif b > 12 >= a:
                seen.add(False)
    return seen.pop() if len(seen) == 1 else None


# ------------------------------------------------------------------------------------------------------- the pages


@dataclass
class _Block:
    """A message block of a page as written: who, when (as text), and what its content holds."""

    number: int  # its position among the page's message blocks
    sender: str
    date: str
    texts: list[str] = field(default_factory=list)
    media: list[tuple[str, str]] = field(default_factory=list)  # (element, uri)
    links: list[str] = field(default_factory=list)


@dataclass
class _HtmlPart:
    path: Path
    title: str | None
    participants: list[str] | None
    blocks: list[_Block]
    digest: str
    cut_at: int | None  # the file's size when it ends early, else None


def _refuse(path: Path, why: str, ours: bool) -> InputFileError:
    if ours:
        return InputFileError(f"{path}: Meta's HTML download of a Messenger/Instagram chat, but {why}; "
                              f"{HOW_TO_GET_JSON}")
    return InputFileError(f"{path}: {why}, not a page of Meta's HTML download of Messenger/Instagram chats (for "
                          f"that download, {HOW_TO_GET_JSON})")


def load_html_part(path: Path, archive: ExportArchive | None = None) -> _HtmlPart:
    """A `message_N.html` read into its title, participants and message blocks (InputFileError when it holds none)."""
    raw = read_export_bytes(path) if archive is None else archive.read_bytes(path)
    digest = hashlib.sha256(raw).hexdigest()
    ours = messenger_html_head(raw[:65536], path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(raw) - 3:  # not a multi-byte character cut at the end
            raise _refuse(path, f"not UTF-8 (byte {e.start})", ours) from None
        text = raw[:e.start].decode("utf-8")
    cut = not text.rstrip().lower().endswith("</html>")
    tree = HTMLTree.parse(text.lstrip("\ufeff"))
    if tree.body is None:
        raise _refuse(path, "no page body", ours)
    main = tree.body.query_selector('[role="main"]') or tree.body.query_selector("main") or tree.body
    blocks, participants = [], None
    for node in html_elements(main):
        kids = list(html_elements(node))
        if len(kids) >= 3 or len(kids) == 2 and _clock_and_fields(kids[-1].text) is not None:
            blocks.append(_read_block(len(blocks), kids))
            continue
        header = " ".join(node.text.split())
        if header.startswith("Participants: ") and participants is None:
            participants = [p.strip() for p in re.split(r", | and ", header[len("Participants: "):]) if p.strip()]
    if cut and blocks:  # the last block before the cut may be cut itself
        blocks.pop()
    if not blocks:
        why = "it ends early, before its first complete message" if cut else "no message in it"
        raise _refuse(path, why, ours or bool(participants))
    if not ours and not any(_clock_and_fields(b.date) for b in blocks):  # some other page, given as this kind
        raise _refuse(path, "no message with a date in it", False)
    if cut:
        log.warning("%s ends early (a cut download or copy?): kept its %d complete messages, the rest is lost", path,
                    len(blocks))
    title = " ".join((tree.title or "").split()) or None
    return _HtmlPart(path, title, participants, blocks, digest, len(raw) if cut else None)


def _read_block(number: int, kids: list) -> _Block:
    block = _Block(number, " ".join(kids[0].text.split()), " ".join(kids[-1].text.split()))
    for node in kids[1:-1]:
        _read_content(node, block)
    return block


def _read_content(node, block: _Block) -> None:
    """The text pieces (one per block-level element), media and links of a content element, in document order;
    lists (the reactions) left out. One pass with a stack of its own: a page nested deep does not recurse."""
    buffer: list[str] = []
    stack: list = [node]
    while stack:
        item = stack.pop()
        if item is None or item.type == NodeType.ELEMENT and item.tag in _BLOCK_TAGS:
            text = "".join(buffer).strip()
            if text:
                block.texts.append(text)
            buffer.clear()
            if item is None:
                continue
        if item.type == NodeType.TEXT:
            buffer.append(item.text)
        elif item.type != NodeType.ELEMENT or item.tag in ("ul", "ol"):
            continue
        elif item.tag == "br":
            buffer.append("\n")
        elif item.tag in _MEDIA_TAGS:
            if item.getattr("src"):
                block.media.append((item.tag, item.getattr("src")))
        elif item.tag == "a" and item.getattr("href"):
            href = item.getattr("href")
            if urlsplit(href).scheme in ("http", "https"):
                block.links.append(href)
            else:
                inner = item.query_selector(", ".join(_MEDIA_TAGS))
                block.media.append((inner.tag if inner is not None else "a", href))
        else:
            if item.tag in _BLOCK_TAGS:
                stack.append(None)  # its text ends where it ends
            stack.extend(reversed(list(html_children(item))))
    text = "".join(buffer).strip()
    if text:
        block.texts.append(text)


# -------------------------------------------------------------------------------------------------------- the chat


def read_html_chat(files: list[tuple[Path, ExportArchive | None]], skips: SkipCounter, source: str,
                   read_record: Callable[..., SourceMessage | None]) -> WhatsAppChat:
    """One chat of a conversation's `message_N.html` parts (each a path and the zip it is read out of, None on
    disk), message_1 first: its messages read by `read_record`, the JSON reader's rules (`tasks.messenger` passes
    its own, one place for both forms), from the JSON records they stand for."""

    parts = [load_html_part(p, archive) for p, archive in files]
    first = parts[0]
    where = str(first.path.parent if len(parts) > 1 else first.path)
    chat_skips = ChatSkips(skips, where)
    day_first = _day_first([b.date for p in parts for b in p.blocks])
    records: list[SourceMessage] = []
    exact = True
    for part in reversed(parts):  # the last part holds the oldest messages
        times = [read_html_date(b.date, day_first) for b in part.blocks]
        known = [t for t in times if t is not None]
        numbered = list(zip(part.blocks, times, strict=True))
        if not known or known[0] >= known[-1]:  # newest first, as Meta writes it
            numbered.reverse()
        for block, time in numbered:
            locator = f"message {block.number}" if len(parts) == 1 else f"{part.path.name}:message {block.number}"
            if time is None:
                chat_skips.skip("messenger_bad_timestamp", locator, repr(block.date)[:60])
                continue
            exact = exact and _CLOCK.search(block.date).group(3) is not None
            record = read_record(_as_json_record(block, time), locator, timezone.utc, without_surrogates,
                                       chat_skips)
            if record is not None:
                records.append(record)
    cut = [p for p in parts if p.cut_at is not None]
    for part in cut:
        locator = f"byte {part.cut_at}" if len(parts) == 1 else f"{part.path.name}@byte {part.cut_at}"
        chat_skips.skip("messenger_truncated_export", locator,
                        f"the file ends early (a cut download?), {len(part.blocks)} complete messages kept, the rest "
                        "lost")
    participants = next((p.participants for p in parts if p.participants), None)
    extra = {
        "chat_type": None if participants is None else "group" if len(participants) > 2 else "one-to-one",
        "source_chat_id": without_surrogates(_own_id(first.path)),
        "participants": participants,
        "is_still_participant": None,
        "export_shape": "html",
        "parts": [p.path.name for p in parts],
        "mojibake_repaired": False,
        "exact_timestamps": exact,
    }
    if cut:
        extra.update(truncated=True, truncated_at_byte=cut[0].cut_at, truncated_parts=[p.path.name for p in cut])
    if len({p.path.parent for p in parts}) > 1:
        extra["part_files"] = [str(p.path) for p in parts]
    title = first.title
    return build_chat(records, chat_id=chat_id_for(combined_sha256([p.digest for p in parts]), _own_id(first.path)),
                      path=first.path, source=source, name=without_surrogates(title) if title else None,
                      skipped=dict(chat_skips.counts), extra=extra)


def _own_id(path: Path) -> str:
    """The conversation's id: "<box>/<folder>" ("inbox/radoslaw_123", what the JSON form's `thread_path` holds)."""
    folder = path.parent
    return f"{folder.parent.name}/{folder.name}" if folder.parent.name.lower() in _BOXES else folder.name


def _as_json_record(block: _Block, time: datetime) -> dict:
    """The JSON form's record of a block: its time as the epoch whose UTC wall clock the page shows."""
    text = "\n".join(block.texts)
    record: dict = {"sender_name": block.sender,
                    "timestamp_ms": round((time - datetime(1970, 1, 1)).total_seconds() * 1000)}
    if _UNSENT.fullmatch(text):
        return {**record, "is_unsent": True}
    if text:
        record["content"] = text
    for tag, uri in block.media:
        key = _media_key(tag, uri)
        if key == "sticker":
            record.setdefault("sticker", {"uri": uri})
        else:
            record.setdefault(key, []).append({"uri": uri})
    if block.links:
        record["share"] = {"link": block.links[0]}
    return record


def _media_key(tag: str, uri: str) -> str:
    folders = [p.lower() for p in PurePosixPath(urlsplit(uri).path).parts[:-1]]
    for folder in reversed(folders):
        if folder in _FOLDER_KEYS:
            return _FOLDER_KEYS[folder]
    if tag in _TAG_KEYS:
        return _TAG_KEYS[tag]
    placeholder = MEDIA_BY_EXTENSION.get(uri.rsplit(".", 1)[-1].lower())
    return next((key for key, shown in DYI_MEDIA_KEYS if shown == placeholder), "files")
