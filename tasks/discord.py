"""Reading Discord chats into chats like the WhatsApp `.txt` parser's, from the two forms people have.

1. DiscordChatExporter's JSON (Tyrrrz/DiscordChatExporter, "Export format: JSON"): one file per channel (or per
   part of a channel, with `--partition`), top-level `guild {id, name}`, `channel {id, type, categoryId,
   category, name, topic}`, `dateRange`, `exportedAt`, `messages [...]`, `messageCount`. Fields relied on, as its
   JsonMessageWriter writes them (checked across its history, 2020 to 2026; nothing copied):

   - a message: `id`, `type` (the name of its MessageKind: Default, Reply, RecipientAdd, RecipientRemove, Call,
     ChannelNameChange, ChannelIconChange, ChannelPinnedMessage, GuildMemberJoin, ThreadCreated; a kind it has no
     name for is written as its number, "8", "20"…), `timestamp` and `timestampEdited` (ISO 8601 with an offset:
     the exporting machine's, or UTC with `--utc`), `callEndedTimestamp` (2020-08 on), `isPinned`, `content`,
     `author {id, name, discriminator, nickname (2021-03 on), isBot}`, `attachments [{id, url, fileName,
     fileSizeBytes}]`, `embeds`, `stickers [{id, name, format, sourceUrl}]` (2022-02 on), `reactions`,
     `mentions [user…]` (2020-10 on), `reference {type (Default | Forward), messageId, channelId, guildId}`
     (2020-12 on), `forwardedMessage {timestamp, content, attachments, embeds, stickers}` (2025 on),
     `interaction`, `inlineEmojis`;
   - `content` is, by default, Discord markdown rendered to plain text: user mentions as `@<display name>`,
     custom emoji as `:name:`, channels as `#name`; with `--markdown false` it is raw: `<@123>`, `<@!123>`,
     `<:name:123>`, `<a:name:123>`, `<#123>`, `<@&123>`, `<t:1700000000:R>`. Both are read: raw user mentions
     become `@<name>` when the author list or the message's `mentions` names them (else they are kept as they
     are), custom emoji `:name:`, channel mentions `#<name>` (this channel's) or `#channel`, role mentions
     `@role`, timestamps the local time in `tz`;
   - system messages (kinds 1-18, DiscordChatExporter's own "system notification" range) have since 2023-02 a
     fallback sentence as `content` ("Joined the server.", "Pinned a message.", "Started a call that lasted 3
     minutes.", "Added Sam to the group.", "Changed the channel name: x", "Started a thread."); older exports
     hold the raw content (often empty). Either way the message becomes kind "system", without author, its text
     "<author> <what happened>" ("Sam joined the server.").

   Authors are `author.nickname` (DiscordChatExporter writes there the server nickname, else the global display
   name, else the username) with `author.name` (the username) when the nickname is missing: it is the name the
   conversation shows and exactly the name the rendered `@mentions` in `content` use, so a pseudonymised chat
   replaces both. Two different accounts showing one name in a chat are told apart as "Name (username)". As a
   nickname can differ between servers, `stats["usernames"]` maps each author name to its username, for
   sft-data's list of target names. Bots keep their messages as the text they are (a bot's reply is part of the
   conversation); they are listed in `stats["bots"]` and counted in `stats["bot_messages"]`.

   Kinds: text; "edited" for a text whose `timestampEdited` is set (as the `.txt` parser marks WhatsApp's
   "<This message was edited>"); "media" for attachments and stickers, one placeholder worded like WhatsApp's per
   attachment or sticker ("image omitted", by the file name's extension; "voice message omitted" for Discord's
   `voice-message.ogg`), the text on the next line; "system" as above. A message with no text, attachment or
   sticker but embeds (a bot's card) is the text of its embeds (title, description, fields). A reply (kind
   Reply) gets `reply_to` from `reference.messageId`, resolved in the chat like Telegram's reply ids (a message
   of another channel or missing from the export stays `#<id>` / `#<channel>/<id>`); a pin's or a thread's
   reference is no reply. Forwards (`reference.type` Forward, `forwardedMessage`) are kept with the forwarded
   text and counted as forwarded (`stats["forwarded"]`, `stats["forwarded_indexes"]`).

2. Discord's own data package (Settings → Data & Privacy → Request all of my data): `messages/` (`Messages/` in
   newer packages) with `index.json` (channel id → "general in My Server", "Direct Message with sam#0"), and one
   `c<channel id>/` folder per channel holding `channel.json` (`id`, `type` (a number in old packages, "DM",
   "GROUP_DM", "GUILD_TEXT", "PUBLIC_THREAD"… in newer ones), `name`, `guild {id, name}`, `recipients`) and
   either `messages.json` (newer: an array of `{ID, Timestamp, Contents, Attachments}`, Timestamp
   "YYYY-MM-DD HH:MM:SS" in UTC) or `messages.csv` (older: header `ID,Timestamp,Contents,Attachments`,
   Timestamp "YYYY-MM-DD HH:MM:SS.ffffff+00:00"); Attachments are URLs separated by spaces. The package holds
   ONLY the account owner's own messages, nobody else's: every message is authored by `owner` (default "me"),
   there are no replies and no other side of any conversation. Such a chat is good for pretraining text and the
   owner's style, but gives no reply to train on; its stats say so (`own_messages_only: True`).

DiscordChatExporter also writes CSV and PlainText (`.txt`), read into the same chats (`stats["export_form"]` says
which; JSON chats have no such key). Neither has message ids (no replies), edits, nicknames or bots; the author is
the account's `name#discriminator` (`name` alone for the new usernames), shown without the discriminator unless two
accounts of the chat share the name ("sam (sam#1234)"); a system message is told by DiscordChatExporter's own
sentence ("Joined the server.", "Pinned a message."…, written since 2023-02; older ones wrote the raw content).
  - CSV: header `AuthorID,Author,Date,Content,Attachments,Reactions` (2019-12 on), attachments as URLs joined by
    `,`; no guild or channel: the chat is named after the file ("Guild - Category - channel", the `[<channel id>]`
    of the default file name its id). Older forms, as its history writes them, are read too (`_CsvForm`):
    `Author,Date,Content,Attachments` (2018-04 to 2018-06, CsvHelper's `,`), then `;` after every field, the
    header's too: `Author;Date;Content;Attachments;` (2018-06 to 2019-06; fields quoted from 2018-11, before only a
    content holding `,` or `;`, its line breaks written as ", "), `Author;Date;Content;Attachments;Reactions;`
    (2019-06 to 2019-09), `AuthorID;Author;Date;Content;Attachments;Reactions;` (2019-09 to 2019-12). The first
    line's separator decides: a modern header never holds a `;`, an old one never a `,`. A row of the wrong number
    of fields is a skipped record naming its row and line.
  - PlainText: a header of a line of 62 `=`, `Guild: `, `Channel: ` ("Category / name" since 2023; the channel
    alone before), `Topic: `…, another line of 62 `=`; then per message `[<date>] <author>` (` (pinned)` after
    it), the content, and blocks `{Attachments}`, `{Embed}`, `{Stickers}`, `{Reactions}` of one line each per item,
    each block ended by an empty line; a message starts at a `[<date>] <author>` line after an empty line whose
    date reads in the file's format; it ends with 62 `=`, `Exported N message(s)`, 62 `=`. This first line and
    the `Guild: ` / `Channel: ` lines under it are what tells such a `.txt` from a WhatsApp export or plain text
    (`looks_like_discord`), which never start so.
  - Dates: CSV since 2023-11 writes ISO 8601 with an offset (read as the JSON's); before, and PlainText always,
    the exporting machine's local time: in the invariant culture before 2023-09 (`--dateformat`: "dd-MMM-yy hh:mm
    tt", "MM/dd/yyyy h:mm tt" from 2023-02, or the user's own format string; English month names and AM/PM), then
    as .NET's "g" format (short date, a space, short time) of the `--locale` given, else of the machine's culture
    (its defaults until 2024-01, then the user's own Windows settings too), or Unix seconds / ms (`--dateformat
    unix`). The shapes of "g" read are those of .NET's culture data (ICU, and Windows' defaults where they differ)
    for en, de, fr, es, it, pt, nl, ru, uk, pl, cs, hr, tr, sv, da, nb, fi, ro, hu, el, id, vi, ar, hi, ja, ko, zh,
    th and the other cultures sharing them: a numeric date in either order or year first, separated by `/`, `.` or
    `-` and maybe a space ("14.03.2024", "14/3/2024", "14-3-2024", "2024/3/14", "2024. 3. 14." ko, "14.03.2024 г."
    bg, "14‏/3‏/2024" ar with its right-to-left marks), then the time: "18:02", "6:02 PM" / "6:02 p. m.", "18.02"
    (fi, da), "18 h 02" (fr-CA), or a 12-hour clock after its designator ("오후 6:02" ko, "下午6:02" zh-TW, "午後
    6:02" ja). th-TH counts years in the Thai Buddhist era (Gregorian + 543): its "g", "d/M/yyyy HH:mm" (ICU's
    "d/M/yy" that .NET widens; "H:mm" in Windows' data), writes 2024-03-14 18:02 as "14/3/2567 18:02", in ASCII
    digits, with no designator. A user's own format (an old `--dateformat`, Windows' short date and time settings,
    or a machine of another culture in the 2018-04 to 2018-06 CSV's "dd-MMM-yy") reads too: day, month (a number
    or a name) and year (four digits or two) in any order, maybe with a weekday before the date or after it, the
    time after the date or before it ("Mar 14, 2024 6:02 PM", "Thu 14/03/2024 18:02:05", "2024-Mar-14 18:02",
    "24/03/14 18:02", "18:02 14.03.2024", "jeudi 14 mars 2024 18:02", "14 de marzo de 2024 18:02", "14 марта 2024
    г. 18:02", "2024. március 14. 18:02", "14 tháng 3, 2024 18:02", "2024年3月14日 18:02", "2024년 3월 14일 오후
    6:02", "2024年3月14日木曜日 18:02", "14 Mart 2024 Perşembe 18:02", "2024. március 14., csütörtök 18:02", "2024
    m. kovo 14 d. 18:02", "2024. gada 14. marts 18:02", "14 במרץ 2024 18:02"). Names are read in the languages of
    `_LANGUAGES`, one table of .NET's names per language (months full and abbreviated, stand-alone and genitive:
    "März", "marca", "března", "maaliskuuta", "Μαρτίου", "lapkričio"; weekdays full and abbreviated: "Thu",
    "木曜日", "יום ה׳"; AM/PM designators: "π.μ." el, "ص" ar, "पूर्वाह्न" hi, "SA" vi, "ÖÖ" tr, "fm" sv, "de." hu,
    "לפנה״צ" he…), with or without a trailing dot, whatever their case: English, French, German, Spanish, Italian,
    Portuguese (pt-BR and pt-PT), Dutch, Polish, Russian, Ukrainian, Turkish, Swedish, Danish, Norwegian (nb),
    Finnish, Czech, Romanian, Hungarian, Greek, Indonesian, Vietnamese, Croatian, Slovak, Slovenian, Bulgarian,
    Lithuanian, Latvian, Estonian and Hebrew; the weekdays and designators of Korean, Chinese and Japanese, whose
    months are numbers; the designators of Arabic, Hindi and Thai. The names are ICU's that .NET asks for (ICU 72.1,
    CLDR 42), and the other forms of CLDR 47 and CLDR 29 (older ICUs); those of sk, sl, bg, lt, lv, et and he are
    CLDR 48's, with the designators older CLDRs wrote (bg "пр.об.", he "לפנה״צ"). Windows' own (NLS) names, which
    .NET used before ICU (.NET Core 3.1), are not read where they differ ("Mrz"…).
    A file's dates are read by one pattern found from all of them (`_DatePattern`; `stats["date_pattern"]`, as .NET
    writes one: "d/M/yyyy H:mm"), as WhatsApp's date order is: of the shapes its dates have (their fields' kinds,
    separators, clock, and whether the time comes first), the one that reads the most of them; its year is the
    field of four digits, else the one whose every value is a year a Discord message can have (2015 to next year:
    "24/03/14" is year first), else the last; a month's name is the month, else of the two numbers left the one over
    12 anywhere in the file is the day (`stats["date_order"]` for a date not year first: "day_first" or
    "month_first"); with neither over 12, or both, the default: month before day after a year, month first with a
    designator after the time as en-US writes it, else day first, said in a log line and by
    `stats["date_order_ambiguous"]` True. Its names are of the languages that have the names of the most of its
    dates (`stats["date_languages"]`, in the table's order: "Mar" alone is English, Spanish, Polish…); a name these
    languages read as two different dates ("listopada": November in Polish, October in Croatian) is read in none,
    and a weekday they give two days ("tor.": Tuesday in Slovenian, Thursday in Danish) reads when it is the date's
    in one of them.
    Its years are of the Buddhist era, and read 543 earlier (`stats["buddhist_era"]` True), only when every one is:
    a year that is no Gregorian one a message can have but is one less 543 (2558 to 2570 in 2026; two digits are
    then of the 2500s). Such a time is kept as written (no zone to convert from), to the minute
    (`stats["exact_timestamps"]` False). A date that does not read is a skipped record (`discord_bad_timestamp`,
    naming its line and why): of another pattern than the file's or another order, a year no message can have
    (before 2015, after next year, a Buddhist-era year among Gregorian ones), a weekday not the date's (before it
    or after it), a weekday on both sides, a month or weekday name not of the file's languages (or of none read
    here: Persian, Catalan, Hindi's months…), a name the file's languages read as different dates, an hour over 12
    beside a designator, designators of languages not read here (fa, mr, ta…) and a Finnish "klo" (fi's "g" is
    "14.3.2024 18.02": it writes none). Not read: ja's "18時02分", a weekday in brackets ("2024/03/14(木)"), words
    other than lt's "m." and "d.", lv's "gada", es's and pt's "de" and he's "ב" between a date's fields.

DiscordChatExporter's `--partition` splits a channel into `<name>.json`, `<name> [part 2].json`, …: the parts of
one channel (same channel id) are read together into one chat, from the first part present (the later ones give
nothing on their own: `is_later_partition`), as Messenger's message_N.json are.

A data package also comes as the `.zip` Discord sends: read as the folder it unzips to (`ExportArchive`: the
same chats and ids), member by member and never extracted.

Timestamps carry an offset (or are UTC in the package) and are written as naive local time in `tz` (default
UTC), as the WhatsApp database reader writes its UTC epochs: pass the zone the person lives in.

A file that is not one of these is refused with a one-line InputFileError naming it; so is a JSON or CSV file cut
short (naming the line and column where it ends). A record that cannot be read (not an object, no readable
timestamp, a field of the wrong type, nothing to show) is skipped and counted, located by chat and message id, in
the skip counter and in the chat's `stats["skipped"]`. Optional fields of the wrong type (a `reference`, a
`mentions` list, `timestampEdited`…) are ignored and counted in `stats["ignored_fields"]`. Files are parsed whole
with the stdlib `json` and `csv`; nothing is fetched (attachment URLs are never opened).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from pathlib import Path

from tasks.chat_records import (
    AUDIO,
    DOCUMENT,
    GIF,
    IMAGE,
    STICKER,
    VIDEO,
    VOICE,
    ChatSkips,
    ExportArchive,
    SourceMessage,
    UnsafeArchiveError,
    build_chat,
    chat_id_for,
    combined_sha256,
    file_sha256,
    is_zip_name,
    read_export_bytes,
    read_export_json,
    read_export_text,
    resolve_tz,
)
from tasks.records import InputFileError, SkipCounter, without_surrogates
from tasks.whatsapp.parser import WhatsAppChat

SOURCE = "discord"
OWNER = "me"  # the author of a data package's messages when `owner` is not given
log = logging.getLogger(__name__)

_PACKAGE_FILES = ("messages.json", "messages.csv")
_PACKAGE_METADATA = ("channel.json", "index.json")
_CHANNEL_FOLDER = re.compile(r"c(\d+)")
_CSV_HEADER = ["ID", "Timestamp", "Contents", "Attachments"]
_EXPORTER_CSV_HEADER = ["AuthorID", "Author", "Date", "Content", "Attachments", "Reactions"]
# every header DiscordChatExporter's CSV has had (see the module's docstring), newest first; its separator (`,` or,
# before 2019-12, `;` with one after every field) is the one that splits the file's first line into one of them
_EXPORTER_CSV_HEADERS = (
    tuple(_EXPORTER_CSV_HEADER),
    ("Author", "Date", "Content", "Attachments", "Reactions"),
    ("Author", "Date", "Content", "Attachments"),
)
_RULE = "=" * 62  # what DiscordChatExporter's PlainText export starts and ends with
_TEXT_HEADER = re.compile(r"\[([^\]\n]{6,64})\] (.+?)(?: \(pinned\))?")  # a date: "[Thursday, March 14…]"
_TEXT_BLOCKS = ("{Attachments}", "{Embed}", "{Stickers}", "{Reactions}")
_PARTITION = re.compile(r"(.+) \[part (\d+)\]")
_FILE_CHANNEL_ID = re.compile(r"(.*?) ?\[(\d+)\]")  # "Guild - Category - channel [<channel id>]"
_DISCRIMINATOR = re.compile(r"#\d{4}$")
_URL = re.compile(r"\S+://\S+")
_TIMESTAMP = re.compile(
    r"\s*(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?\s*(Z|[+-]\d\d(?::?\d\d)?)?\s*")
# raw Discord markup (DiscordChatExporter with `--markdown false`); rendered exports hold none of it
_MARKUP = re.compile(r"<(?:(a?):(\w{1,64}):\d+|@!?(\d+)|@&(\d+)|#(\d+)|t:(-?\d{1,13})(?::[tTdDfFR])?)>")
_SYSTEM_KINDS = {
    "RecipientAdd": "added someone to the group",
    "RecipientRemove": "removed someone from the group",
    "Call": "started a call",
    "ChannelNameChange": "changed the channel name",
    "ChannelIconChange": "changed the channel icon",
    "ChannelPinnedMessage": "pinned a message",
    "GuildMemberJoin": "joined the server",
    "ThreadCreated": "started a thread",
}
# the sentences DiscordChatExporter (2023-02 on) writes as a system message's content: kept, after the author
_FALLBACK = re.compile(r"(Added |Removed |Left the group|Started a call|Changed the channel (name|icon)|"
                       r"Pinned a message|Started a thread|Joined the server)")
# DiscordChatExporter's sentence for a system message (its CSV and PlainText hold no kind) → the kind
_SYSTEM_SENTENCES = (
    (re.compile(r"Added .+ to the group\.|Added a recipient\."), "RecipientAdd"),
    (re.compile(r"Left the group\.|Removed .+ from the group\.|Removed a recipient\."), "RecipientRemove"),
    (re.compile(r"Started a call that lasted [\d,.\s]+ minutes?\."), "Call"),
    (re.compile(r"Changed the channel name(?:: .+|\.)"), "ChannelNameChange"),
    (re.compile(r"Changed the channel icon\."), "ChannelIconChange"),
    (re.compile(r"Pinned a message\."), "ChannelPinnedMessage"),
    (re.compile(r"Started a thread\."), "ThreadCreated"),
    (re.compile(r"Joined the server\."), "GuildMemberJoin"),
)
# the names .NET writes in dates, one row per language: its months (January first) and weekdays (Monday first), each
# as every form written ("/" between them, "|" between months or days), then its AM and PM designators. Each form is
# one of .NET's (ICU's symbols .NET asks for: months stand-alone and genitive, full and abbreviated; weekdays
# stand-alone, full and abbreviated; AM/PM), as ICU 72.1 (CLDR 42) writes them, with the other forms CLDR 47 and
# CLDR 29 (older ICUs) have. A name reads whatever its case and trailing dot; "Jan*uary" stands for every
# abbreviation from "Jan" on ("Janu", "Sept", "Thurs"), as English dates have always been read here. Languages are
# named in English, as a date's reason says it ("has no English month name")
_LANGUAGES: dict[str, tuple[str, str, str]] = {
    "English": (
        "Jan*uary|Feb*ruary|Mar*ch|Apr*il|May|Jun*e|Jul*y|Aug*ust|Sep*tember|Oct*ober|Nov*ember|Dec*ember",
        "Mon*day|Tue*sday|Wed*nesday|Thu*rsday|Fri*day|Sat*urday|Sun*day",
        "AM|PM"),
    "French": (
        "janvier/janv.|février/févr.|mars|avril/avr.|mai|juin|juillet/juil.|août|septembre/sept.|octobre/oct."
        "|novembre/nov.|décembre/déc.",
        "lundi/lun.|mardi/mar.|mercredi/mer.|jeudi/jeu.|vendredi/ven.|samedi/sam.|dimanche/dim.",
        "AM|PM"),
    "German": (
        "Januar/Jan|Februar/Feb|März/Mär|April/Apr|Mai|Juni/Jun|Juli/Jul|August/Aug|September/Sep/Sept.|Oktober/Okt"
        "|November/Nov|Dezember/Dez",
        "Montag/Mo|Dienstag/Di|Mittwoch/Mi|Donnerstag/Do|Freitag/Fr|Samstag/Sa|Sonntag/So",
        "AM/vorm.|PM/nachm."),
    "Spanish": (
        "enero/ene|febrero/feb|marzo/mar|abril/abr|mayo/may|junio/jun|julio/jul|agosto/ago|septiembre/sept"
        "|octubre/oct|noviembre/nov|diciembre/dic",
        "lunes/lun|martes/mar|miércoles/mié|jueves/jue|viernes/vie|sábado/sáb|domingo/dom",
        "a. m.|p. m."),
    "Italian": (
        "gennaio/gen|febbraio/feb|marzo/mar|aprile/apr|maggio/mag|giugno/giu|luglio/lug|agosto/ago|settembre/set"
        "|ottobre/ott|novembre/nov|dicembre/dic",
        "lunedì/lun|martedì/mar|mercoledì/mer|giovedì/gio|venerdì/ven|sabato/sab|domenica/dom",
        "AM|PM"),
    "Portuguese": (  # pt-BR and pt-PT
        "janeiro/jan.|fevereiro/fev.|março/mar.|abril/abr.|maio/mai.|junho/jun.|julho/jul.|agosto/ago.|setembro/set."
        "|outubro/out.|novembro/nov.|dezembro/dez.",
        "segunda-feira/seg./segunda|terça-feira/ter./terça|quarta-feira/qua./quarta|quinta-feira/qui./quinta"
        "|sexta-feira/sex./sexta|sábado/sáb.|domingo/dom.",
        "AM/da manhã|PM/da tarde"),
    "Dutch": (
        "januari/jan|februari/feb|maart/mrt|april/apr|mei|juni/jun|juli/jul|augustus/aug|september/sep|oktober/okt"
        "|november/nov|december/dec",
        "maandag/ma|dinsdag/di|woensdag/wo|donderdag/do|vrijdag/vr|zaterdag/za|zondag/zo",
        "a.m.|p.m."),
    "Polish": (
        "styczeń/stycznia/sty|luty/lutego/lut|marzec/marca/mar|kwiecień/kwietnia/kwi|maj/maja|czerwiec/czerwca/cze"
        "|lipiec/lipca/lip|sierpień/sierpnia/sie|wrzesień/września/wrz|październik/października/paź"
        "|listopad/listopada/lis|grudzień/grudnia/gru",
        "poniedziałek/pon.|wtorek/wt.|środa/śr.|czwartek/czw.|piątek/pt.|sobota/sob.|niedziela/niedz.",
        "AM|PM"),
    "Russian": (
        "январь/января/янв.|февраль/февраля/февр.|март/марта/мар.|апрель/апреля/апр.|май/мая|июнь/июня/июн."
        "|июль/июля/июл.|август/августа/авг.|сентябрь/сентября/сент.|октябрь/октября/окт.|ноябрь/ноября/нояб."
        "|декабрь/декабря/дек.",
        "понедельник/пн|вторник/вт|среда/ср|четверг/чт|пятница/пт|суббота/сб|воскресенье/вс",
        "AM/ДП|PM/ПП"),
    "Ukrainian": (
        "січень/січня/січ|лютий/лютого/лют|березень/березня/бер|квітень/квітня/кві/квіт.|травень/травня/тра/трав."
        "|червень/червня/чер/черв.|липень/липня/лип|серпень/серпня/сер/серп.|вересень/вересня/вер"
        "|жовтень/жовтня/жов/жовт.|листопад/листопада/лис/лист.|грудень/грудня/гру/груд.",
        "понеділок/пн|вівторок/вт|середа/ср|четвер/чт|пʼятниця/пт|субота/сб|неділя/нд",
        "дп|пп"),
    "Turkish": (
        "Ocak/Oca|Şubat/Şub|Mart/Mar|Nisan/Nis|Mayıs/May|Haziran/Haz|Temmuz/Tem|Ağustos/Ağu|Eylül/Eyl|Ekim/Eki"
        "|Kasım/Kas|Aralık/Ara",
        "Pazartesi/Pzt|Salı/Sal|Çarşamba/Çar|Perşembe/Per|Cuma/Cum|Cumartesi/Cmt|Pazar/Paz",
        "ÖÖ|ÖS"),
    "Swedish": (
        "januari/jan.|februari/feb.|mars|april/apr.|maj|juni|juli|augusti/aug.|september/sep.|oktober/okt."
        "|november/nov.|december/dec.",
        "måndag/mån|tisdag/tis|onsdag/ons|torsdag/tors|fredag/fre|lördag/lör|söndag/sön",
        "fm|em"),
    "Danish": (
        "januar/jan.|februar/feb.|marts/mar.|april/apr.|maj|juni/jun.|juli/jul.|august/aug.|september/sep."
        "|oktober/okt.|november/nov.|december/dec.",
        "mandag/man.|tirsdag/tirs./tir|onsdag/ons.|torsdag/tors./tor|fredag/fre.|lørdag/lør.|søndag/søn.",
        "AM|PM"),
    "Norwegian": (  # nb
        "januar/jan|februar/feb|mars/mar|april/apr|mai|juni/jun|juli/jul|august/aug|september/sep|oktober/okt"
        "|november/nov|desember/des",
        "mandag/man.|tirsdag/tir.|onsdag/ons.|torsdag/tor.|fredag/fre.|lørdag/lør.|søndag/søn.",
        "a.m.|p.m."),
    "Finnish": (
        "tammikuu/tammikuuta/tammi/tammik.|helmikuu/helmikuuta/helmi/helmik.|maaliskuu/maaliskuuta/maalis/maalisk."
        "|huhtikuu/huhtikuuta/huhti/huhtik.|toukokuu/toukokuuta/touko/toukok.|kesäkuu/kesäkuuta/kesä/kesäk."
        "|heinäkuu/heinäkuuta/heinä/heinäk.|elokuu/elokuuta/elo/elok.|syyskuu/syyskuuta/syys/syysk."
        "|lokakuu/lokakuuta/loka/lokak.|marraskuu/marraskuuta/marras/marrask.|joulukuu/joulukuuta/joulu/jouluk.",
        "maanantai/ma|tiistai/ti|keskiviikko/ke|torstai/to|perjantai/pe|lauantai/la|sunnuntai/su",
        "ap.|ip."),
    "Czech": (
        "leden/ledna/led|únor/února/úno|březen/března/bře|duben/dubna/dub|květen/května/kvě|červen/června/čvn"
        "|červenec/července/čvc|srpen/srpna/srp|září/zář|říjen/října/říj|listopad/listopadu/lis"
        "|prosinec/prosince/pro",
        "pondělí/po|úterý/út|středa/st|čtvrtek/čt|pátek/pá|sobota/so|neděle/ne",
        "dop.|odp."),
    "Romanian": (
        "ianuarie/ian.|februarie/feb.|martie/mar.|aprilie/apr.|mai|iunie/iun.|iulie/iul.|august/aug."
        "|septembrie/sept.|octombrie/oct.|noiembrie/nov.|decembrie/dec.",
        "luni/lun.|marți/mar.|miercuri/mie.|joi|vineri/vin.|sâmbătă/sâm.|duminică/dum.",
        "a.m.|p.m."),
    "Hungarian": (
        "január/jan.|február/febr.|március/márc.|április/ápr.|május/máj.|június/jún.|július/júl.|augusztus/aug."
        "|szeptember/szept.|október/okt.|november/nov.|december/dec.",
        "hétfő/H|kedd/K|szerda/Sze|csütörtök/Cs|péntek/P|szombat/Szo|vasárnap/V",
        "de.|du."),
    "Greek": (
        "Ιανουάριος/Ιανουαρίου/Ιαν|Φεβρουάριος/Φεβρουαρίου/Φεβ|Μάρτιος/Μαρτίου/Μάρ/Μαρ|Απρίλιος/Απριλίου/Απρ"
        "|Μάιος/Μαΐου/Μάι/Μαΐ|Ιούνιος/Ιουνίου/Ιούν/Ιουν|Ιούλιος/Ιουλίου/Ιούλ/Ιουλ|Αύγουστος/Αυγούστου/Αύγ/Αυγ"
        "|Σεπτέμβριος/Σεπτεμβρίου/Σεπ|Οκτώβριος/Οκτωβρίου/Οκτ|Νοέμβριος/Νοεμβρίου/Νοέ/Νοε|Δεκέμβριος/Δεκεμβρίου/Δεκ",
        "Δευτέρα/Δευ|Τρίτη/Τρί|Τετάρτη/Τετ|Πέμπτη/Πέμ|Παρασκευή/Παρ|Σάββατο/Σάβ|Κυριακή/Κυρ",
        "π.μ.|μ.μ."),
    "Indonesian": (
        "Januari/Jan|Februari/Feb|Maret/Mar|April/Apr|Mei|Juni/Jun|Juli/Jul|Agustus/Agu/Agt|September/Sep"
        "|Oktober/Okt|November/Nov|Desember/Des",
        "Senin/Sen|Selasa/Sel|Rabu/Rab|Kamis/Kam|Jumat/Jum|Sabtu/Sab|Minggu/Min",
        "AM|PM"),
    "Vietnamese": (
        "Tháng 1/Thg 1|Tháng 2/Thg 2|Tháng 3/Thg 3|Tháng 4/Thg 4|Tháng 5/Thg 5|Tháng 6/Thg 6|Tháng 7/Thg 7"
        "|Tháng 8/Thg 8|Tháng 9/Thg 9|Tháng 10/Thg 10|Tháng 11/Thg 11|Tháng 12/Thg 12",
        "Thứ Hai/Th 2/Thứ 2|Thứ Ba/Th 3/Thứ 3|Thứ Tư/Th 4/Thứ 4|Thứ Năm/Th 5/Thứ 5|Thứ Sáu/Th 6/Thứ 6"
        "|Thứ Bảy/Th 7/Thứ 7|Chủ Nhật/CN",
        "SA|CH"),
    "Croatian": (
        "siječanj/siječnja/sij|veljača/veljače/velj|ožujak/ožujka/ožu|travanj/travnja/tra|svibanj/svibnja/svi"
        "|lipanj/lipnja/lip|srpanj/srpnja/srp|kolovoz/kolovoza/kol|rujan/rujna/ruj|listopad/listopada/lis"
        "|studeni/studenoga/stu|prosinac/prosinca/pro",
        "ponedjeljak/pon|utorak/uto|srijeda/sri|četvrtak/čet|petak/pet|subota/sub|nedjelja/ned",
        "AM|PM"),
    # these seven as CLDR 48 writes them, with the designators older CLDRs wrote
    "Slovak": (
        "január/januára/jan|február/februára/feb|marec/marca/mar|apríl/apríla/apr|máj/mája|jún/júna|júl/júla"
        "|august/augusta/aug|september/septembra/sep|október/októbra/okt|november/novembra/nov"
        "|december/decembra/dec",
        "pondelok/po|utorok/ut|streda/st|štvrtok/št|piatok/pi|sobota/so|nedeľa/ne",
        "AM|PM"),
    "Slovenian": (
        "januar/jan.|februar/feb.|marec/mar.|april/apr.|maj|junij/jun.|julij/jul.|avgust/avg.|september/sep."
        "|oktober/okt.|november/nov.|december/dec.",
        "ponedeljek/pon.|torek/tor.|sreda/sre.|četrtek/čet.|petek/pet.|sobota/sob.|nedelja/ned.",
        "dop.|pop."),
    "Bulgarian": (
        "януари/яну|февруари/фев|март|април/апр|май|юни|юли|август/авг|септември/сеп|октомври/окт|ноември/ное"
        "|декември/дек",
        "понеделник/пн|вторник/вт|сряда/ср|четвъртък/чт|петък/пт|събота/сб|неделя/нд",
        "am/пр.об.|pm/сл.об."),  # CLDR 48's, and CLDR 25's
    "Lithuanian": (
        "sausis/sausio/saus.|vasaris/vasario/vas.|kovas/kovo/kov.|balandis/balandžio/bal.|gegužė/gegužės/geg."
        "|birželis/birželio/birž.|liepa/liepos/liep.|rugpjūtis/rugpjūčio/rugp.|rugsėjis/rugsėjo/rugs."
        "|spalis/spalio/spal.|lapkritis/lapkričio/lapkr.|gruodis/gruodžio/gruod.",
        "pirmadienis/pr|antradienis/an|trečiadienis/tr|ketvirtadienis/kt|penktadienis/pn|šeštadienis/št"
        "|sekmadienis/sk",
        "priešpiet|popiet"),
    "Latvian": (
        "janvāris/janv.|februāris/febr.|marts|aprīlis/apr.|maijs|jūnijs/jūn.|jūlijs/jūl.|augusts/aug."
        "|septembris/sept.|oktobris/okt.|novembris/nov.|decembris/dec.",
        "pirmdiena/pirmd.|otrdiena/otrd.|trešdiena/trešd.|ceturtdiena/ceturtd.|piektdiena/piektd.|sestdiena/sestd."
        "|svētdiena/svētd.",
        "priekšp.|pēcp."),
    "Estonian": (
        "jaanuar/jaan|veebruar/veebr|märts|aprill/apr|mai|juuni|juuli|august/aug|september/sept|oktoober/okt"
        "|november/nov|detsember/dets",
        "esmaspäev/E|teisipäev/T|kolmapäev/K|neljapäev/N|reede/R|laupäev/L|pühapäev/P",
        "AM|PM"),
    "Hebrew": (  # abbreviations end in a geresh (U+05F3), as ICU writes them
        "ינואר/ינו׳|פברואר/פבר׳|מרץ|אפריל/אפר׳|מאי|יוני|יולי|אוגוסט/אוג׳|ספטמבר/ספט׳|אוקטובר/אוק׳|נובמבר/נוב׳"
        "|דצמבר/דצמ׳",
        "יום שני/יום ב׳|יום שלישי/יום ג׳|יום רביעי/יום ד׳|יום חמישי/יום ה׳|יום שישי/יום ו׳|יום שבת/שבת"
        "|יום ראשון/יום א׳",
        "AM/לפנה״צ|PM/אחה״צ"),  # CLDR 48's, and older CLDRs'
    # languages whose months are numbers ("2024年3月14日"): their weekdays (zh's of Simplified and Traditional
    # script) and designators
    "Korean": ("", "월요일/월|화요일/화|수요일/수|목요일/목|금요일/금|토요일/토|일요일/일", "오전|오후"),
    "Chinese": ("", "星期一/周一/週一|星期二/周二/週二|星期三/周三/週三|星期四/周四/週四|星期五/周五/週五"
                "|星期六/周六/週六|星期日/周日/週日", "上午|下午"),
    "Japanese": ("", "月曜日/月|火曜日/火|水曜日/水|木曜日/木|金曜日/金|土曜日/土|日曜日/日", "午前|午後"),
    # languages whose dates are read by their designators alone (numbers only, or names not read here)
    "Arabic": ("", "", "ص|م"),
    "Hindi": ("", "", "am/पूर्वाह्न|pm/अपराह्न"),  # ICU's, and CLDR 29's (ICUs before 2018)
    "Thai": ("", "", "ก่อนเที่ยง|หลังเที่ยง"),
}


def _name_key(word: str) -> str:
    """What a written month or weekday name is looked up as: case, a trailing dot and the kind of space not told."""
    return " ".join(word.casefold().rstrip(".").split())


def _designator_key(word: str) -> str:
    """What a written AM/PM designator is looked up as: "a. m.", "A.M." and "am" alike."""
    return "".join(word.casefold().replace(".", "").split())


def _index_names(column: int) -> dict[str, dict[str, int]]:
    """Every form of `_LANGUAGES`' months (column 0) or weekdays (1) → {language: its place (from 0)}."""
    index: dict[str, dict[str, int]] = {}
    for language, row in _LANGUAGES.items():
        for place, forms in enumerate(row[column].split("|") if row[column] else ()):
            for form in forms.split("/"):
                stem, star, rest = form.partition("*")
                for end in range(len(rest) + 1) if star else (0,):
                    index.setdefault(_name_key(stem + rest[:end]), {})[language] = place
    return index


def _alternatives(forms: set[str], space: str) -> str:
    """A pattern for any of `forms` (longest first), each space in one matching `space`."""
    return "|".join(space.join(map(re.escape, form.split())) for form in sorted(forms, key=len, reverse=True))


_MONTHS = _index_names(0)
_WEEKDAYS = _index_names(1)
_DESIGNATORS = {_designator_key(form): place == 1 for _, _, designators in _LANGUAGES.values()
                for place, forms in enumerate(designators.split("|")) for form in forms.split("/")}  # → afternoon
# times as DiscordChatExporter's CSV and PlainText write them in a locale's format or a user's own (see the module's
# docstring): maybe a weekday, then the date's three fields (numbers, or one a month's name, which may hold a space:
# vi "thg 3", or end in a geresh: he "נוב׳") and their separators ("/", ".", "-", ". " ko and hu, ", " of "Mar 14,
# 2024", a space, " de " es and pt, " m. " lt, ". gada " lv, " ב" he, 年 月 ja and zh, 년 월 ko, a right-to-left mark
# before one: ar), a trailing "." (ko, hu, hr), " г." (bg, ru), " р." (uk), " d." (lt), 日 or 일; maybe a weekday
# after the date (right after 日: ja and zh; after a space: ko, tr, hu); then the time: "18:02", "18.02" (fi, da),
# "18 h 02" (fr-CA), a 12-hour clock's designator before it (ko, zh-TW, ja, tr…) or after it. `_TIME_FIRST` reads
# the same with the time before the date ("18:02 14.03.2024"). Which field is the day, the month and the year is
# decided for the whole file (`_DatePattern`); a word as a month that is no name read here matches, to be counted as
# unread (not taken for a message's text in PlainText)
_SPACED_MONTHS = _alternatives({form for form in _MONTHS if " " in form}, r"\s")
_SPACED_WEEKDAYS = _alternatives({form for form in _WEEKDAYS if " " in form}, r"\s")
# a weekday: a word (a hyphen inside: pt's "quinta-feira") or two ("Thứ Năm"), never the start of a month's name of
# two words ("thg 3 14, 2024")
_WEEKDAY = rf"(?!(?:{_SPACED_MONTHS})\b)(?:[^\W\d_]+(?:-[^\W\d_]+)?\.?|{_SPACED_WEEKDAYS})"
_FIELD = rf"\d{{1,4}}|[^\W\d_]{{3,}}[.\u05f3]?|{_SPACED_MONTHS}"
_BETWEEN_FIELDS = r"\s?[./-]\s?|\.\sgada\s|,?\s(?:de\s|m\.\s|ב)?|[年月]|[년월]\s?"
_BIDI_MARK = r"[\u200e\u200f\u061c]?"  # ar's short date writes one after its day and its month
_DESIGNATOR = _alternatives({f for _, _, d in _LANGUAGES.values() for f in re.split("[|/]", d)}, r"\s?")
# a weekday after the date, after a space or right after 日, is one of the names read here (a word there may be no
# weekday at all: "14.03.2024 um 18:02"); it is tried last (`_DATE`'s "??"), so that a designator before the time
# ("오후 6:02") stays one
_KNOWN_WEEKDAY = _alternatives(set(_WEEKDAYS), r"\s")
_LATE_WEEKDAY = (rf"(?P<before_late_weekday>(?<=日)|\s)(?=[^\W\d_])"
                 rf"(?P<late_weekday>(?:{_KNOWN_WEEKDAY})\.?)")
_DATE = (rf"(?:(?P<weekday>{_WEEKDAY})(?P<after_weekday>,?\s))?"
         rf"(?P<f0>{_FIELD}){_BIDI_MARK}(?P<s0>{_BETWEEN_FIELDS})(?P<f1>{_FIELD}){_BIDI_MARK}"
         rf"(?P<s1>{_BETWEEN_FIELDS})(?P<f2>{_FIELD})"
         rf"(?P<end>\.?(?:\s?[гр]\.|\sd\.)?,?|日|일)(?:{_LATE_WEEKDAY})??")
# every designator starts with a letter: the lookaheads spare trying each of them on a digit or the text's end
_TIME = (rf"(?:(?=[^\W\d_])(?P<before>{_DESIGNATOR})\s?)?(?P<hour>\d{{1,2}})(?P<clock>[:.]|\s?h\s?)"
         rf"(?P<minute>\d\d)(?:[:.](?P<second>\d\d))?(?:\s*(?=[^\W\d_])(?P<after>[AP]\.?\s?M\.?|{_DESIGNATOR}))?")
_LOCAL_TIME = re.compile(rf"\s*{_DATE}\s+{_TIME}\s*", re.IGNORECASE)
_TIME_FIRST = re.compile(rf"\s*{_TIME},?\s+{_DATE}\s*", re.IGNORECASE)
_EPOCH_TIME = re.compile(r"\s*(\d{10}|\d{13})\s*")
_SPACES = re.compile(r"\s+")
# no Discord message is older (its ids count from 2015-01-01): the earliest year a written date can hold
_DISCORD_FIRST_YEAR = 2015
_BUDDHIST_ERA = 543  # years the Thai Buddhist calendar (.NET's th-TH) counts ahead of the Gregorian one
_WHAT = "a Discord export"
_IMAGE_EXT = {"jpg", "jpeg", "png", "webp", "bmp", "heic", "heif", "tif", "tiff", "avif", "svg"}
_VIDEO_EXT = {"mp4", "mov", "webm", "mkv", "avi", "m4v", "wmv", "3gp"}
_AUDIO_EXT = {"mp3", "wav", "m4a", "flac", "aac", "ogg", "opus", "wma"}


# ------------------------------------------------------------------------------------------------ public API


def looks_like_discord(path: str | os.PathLike, head_bytes: int = 8192) -> bool:
    """Cheap sniff for input-kind detection: a `.json` whose head holds DiscordChatExporter's `guild`, `channel`
    and `messages` (or `dateRange`), its CSV (by its header) or PlainText (a line of 62 `=`, then `Guild: ` and
    `Channel: `), or a data package's `messages.json` / `messages.csv` in a `c<digits>` folder.
    """
    path = Path(path)
    name = path.name.lower()
    if not name.endswith((".json", ".csv", ".txt")):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(head_bytes).decode("utf-8", errors="ignore")
    except OSError:
        return False
    head = head.lstrip("\ufeff \t\r\n")
    if name.endswith(".txt"):
        lines = head.replace("\r\n", "\n").split("\n", 3)
        return (len(lines) > 3 and lines[0] == _RULE and lines[1].startswith("Guild: ")
                and lines[2].startswith("Channel: "))
    if name.endswith(".csv") and _is_exporter_csv(head):
        return True
    if name in _PACKAGE_FILES and _CHANNEL_FOLDER.fullmatch(path.parent.name):
        if name.endswith(".csv"):
            return head.startswith("ID,Timestamp,Contents")
        return head.startswith("[")
    return (name.endswith(".json") and head.startswith("{") and '"guild"' in head and '"channel"' in head
            and ('"messages"' in head or '"dateRange"' in head))


def looks_like_discord_archive(path: str | os.PathLike) -> bool:
    """Cheap sniff for input-kind detection: a zip holding a data package's `c<digits>/messages.json` or
    `messages.csv` (Discord's "Request all of my data"). Never raises."""
    try:
        with ExportArchive(path) as archive:
            return bool(_archive_package_files(archive))
    except InputFileError:
        return False


def is_later_partition(path: str | os.PathLike) -> bool:
    """A `… [part N]` file of a partitioned DiscordChatExporter export that is not the first part present:
    `read_discord_export` reads it with the first one (and returns nothing for it alone)."""
    path = Path(path)
    return _PARTITION.fullmatch(path.stem) is not None and exporter_parts(path)[0] != path


def exporter_parts(path: str | os.PathLike) -> list[Path]:
    """The files of the DiscordChatExporter export `path` belongs to: `<name>.json`, `<name> [part 2].json`… in its
    folder, in part order; a file whose name has no part beside it alone."""
    path = Path(path)
    base, _ = _partition(path)
    try:
        parts = [p for p in path.parent.iterdir() if p.suffix == path.suffix and _partition(p)[0] == base
                 and p.is_file()]
    except OSError:
        return [path]
    if path not in parts:
        parts.append(path)
    return sorted(parts, key=lambda p: (_partition(p)[1], p.name))


def export_sha256(path: str | os.PathLike) -> str:
    """The content hash of what `read_discord_export(path)` reads from a file: every part of a partitioned export,
    else the file (what ingest keys a Discord input's work on)."""
    path = Path(path)
    if is_zip_name(path):
        return file_sha256(path)
    return combined_sha256([file_sha256(p) for p in exporter_parts(path)])


def _partition(path: Path) -> tuple[str, int]:
    """The stem of a partitioned export's first part, and this part's number (1 for a name without one)."""
    m = _PARTITION.fullmatch(path.stem)
    return (m.group(1), int(m.group(2))) if m else (path.stem, 1)


def is_discord_package_metadata(path: str | os.PathLike) -> bool:
    """A data package's `channel.json` (in a `c<digits>` folder) or `messages/index.json`: read along with the
    channel's `messages.json` / `messages.csv`, holding no message of its own (ingest can pass over it)."""
    path = Path(path)
    name = path.name.lower()
    if name == "channel.json":
        return bool(_CHANNEL_FOLDER.fullmatch(path.parent.name))
    if name == "index.json":
        return any(_CHANNEL_FOLDER.fullmatch(p.name) for p in _subfolders(path.parent))
    return False


def read_discord_export(
    path: str | os.PathLike,
    skips: SkipCounter | None = None,
    *,
    tz: tzinfo | str | None = None,
    owner: str = OWNER,
    partitions: bool = True,
) -> list[WhatsAppChat]:
    """The chats of a Discord export, one `WhatsAppChat` each (source "discord").

    `path` is a DiscordChatExporter JSON, CSV or PlainText file (one chat; with `partitions`, the first part of a
    partitioned export reads every part, a later part gives nothing), a data package's `messages.json` /
    `messages.csv` or its `c<id>` folder (one chat), or the package's `messages/` folder, the package itself or its
    `.zip` (one chat per channel folder, in folder order); a package's `channel.json` / `index.json` alone gives no
    chat (they are read with the messages file). `tz` is the zone timestamps are written in (default UTC);
    `owner` is the author of a data package's messages, which are all the owner's own (the package has nobody
    else's, so no replies).
    `chat_id` derives from the messages file's sha256 and the channel id. Skipped records are counted in `skips`
    and the chat's `stats["skipped"]`. Raises InputFileError, naming the file, for what is no Discord export.
    """
    path = Path(path)
    skips = skips if skips is not None else SkipCounter()
    zone = resolve_tz(tz)
    if path.is_dir():
        return [_read_package_file(f, skips, zone, owner) for f in _package_files(path)]
    if is_zip_name(path):
        with ExportArchive(path) as archive:
            files = _archive_package_files(archive)
            if not files:
                raise InputFileError(f"{path}: a zip without a Discord data package's channel folders "
                                     "(c<id>/messages.json or messages.csv), not a Discord export")
            return [_read_package_file(f, skips, zone, owner, archive=archive) for f in files]
    if is_discord_package_metadata(path):
        log.info("%s: a data package's metadata, read with the channel's messages file", path)
        return []
    if partitions and is_later_partition(path):
        log.info("%s: read with %s, the first part of its export", path, exporter_parts(path)[0].name)
        return []
    raw = read_export_bytes(path)
    digest = hashlib.sha256(raw).hexdigest()  # file_sha256's, from the bytes read
    if path.name.lower().endswith(".csv") and not _is_exporter_csv(raw[:200].decode("utf-8", "ignore")):
        return [_read_package_file(path, skips, zone, owner, digest, raw=raw)]
    data = _load_exporter(path, raw)
    if isinstance(data, list):
        return [_read_package_file(path, skips, zone, owner, digest, data)]
    pieces = [(path, digest, data)]
    for part in exporter_parts(path)[1:] if partitions else []:
        more = read_export_bytes(part)
        loaded = _load_exporter(part, more)
        if isinstance(loaded, list):
            raise InputFileError(f"{part}: a data package's messages, not a part of {path.name}'s export")
        pieces.append((part, hashlib.sha256(more).hexdigest(), loaded))
    by_channel: dict[str, list] = {}  # a part of another channel (a name reused) is a chat of its own
    for piece in pieces:
        by_channel.setdefault(_piece_channel(piece[2]), []).append(piece)
    return [_read_exporter(group, zone, skips) for group in by_channel.values()]


def _load_exporter(path: Path, raw: bytes) -> dict | list:
    """A DiscordChatExporter file as its JSON shape (CSV and PlainText converted: `_exporter_csv`,
    `_exporter_text`), or a data package's messages.json (a list)."""
    name = path.name.lower()
    if name.endswith(".csv"):
        return _exporter_csv(path, read_export_text(path, _WHAT, raw))
    if name.endswith(".txt"):
        return _exporter_text(path, read_export_text(path, _WHAT, raw))
    data = read_export_json(path, _WHAT, raw)
    if isinstance(data, dict) and ("guild" in data or "channel" in data):
        return data
    package_file = name == "messages.json" and _CHANNEL_FOLDER.fullmatch(path.parent.name)
    if isinstance(data, list) and (package_file or any(
            isinstance(m, dict) and "Timestamp" in m and ("Contents" in m or "ID" in m) for m in data[:20])):
        return data
    found = (", ".join(map(str, list(data)[:6])) or "no key") if isinstance(data, dict) else type(data).__name__
    raise InputFileError(
        f"{path}: JSON without DiscordChatExporter's 'guild', 'channel' and 'messages' or a data package's "
        f"messages (found {found}), not a Discord export"
    )


def _piece_channel(data: dict) -> str:
    channel = data.get("channel")
    return (_id(channel.get("id")) or "") if isinstance(channel, dict) else ""


# ------------------------------------------------------------------------------------------------ loading


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def _package_files(folder: Path) -> list[Path]:
    """The messages files a folder names: a channel folder's own, or those of the channel folders in it (or in
    its `messages/` folder)."""
    own = _channel_messages_file(folder)
    if own is not None:
        return [own]
    candidates = [folder] + [p for p in _subfolders(folder) if p.name.lower() == "messages"]
    for base in candidates:
        files = [f for f in map(_channel_messages_file, _subfolders(base)) if f is not None]
        if files:
            return files
    raise InputFileError(
        f"{folder}: a folder without a Discord data package's channel folders (c<id>/messages.json or "
        "messages.csv), not a Discord export"
    )


def _archive_package_files(archive: ExportArchive) -> list[Path]:
    """The channels' messages files of a data package's zip, as `_package_files` finds them in the folder."""
    files: dict[Path, Path] = {}
    for f in archive.files():
        if f.name in _PACKAGE_FILES and _CHANNEL_FOLDER.fullmatch(f.parent.name):
            if f.parent not in files or f.name == _PACKAGE_FILES[0]:  # messages.json before messages.csv
                files[f.parent] = f
    return [files[folder] for folder in sorted(files)]


def _channel_messages_file(folder: Path) -> Path | None:
    if not _CHANNEL_FOLDER.fullmatch(folder.name):
        return None
    for name in _PACKAGE_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


# ------------------------------------------------------------------------------------------------ shared helpers


def _id(value: object) -> str | None:
    """An id as a string: a string or an int as written; anything else is no id."""
    if isinstance(value, str) and value:
        return without_surrogates(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _timestamp(value: object, zone: tzinfo) -> datetime | None:
    """An ISO 8601 time (`T` or space, any fraction, `Z`, `+hh:mm` or none: UTC) as naive local time in `zone`."""
    if not isinstance(value, str):
        return None
    m = _TIMESTAMP.fullmatch(value)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = m.groups()
    micro = int((fraction + "000000")[:6]) if fraction else 0
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micro,
                          _offset(offset))
        return moment.astimezone(zone).replace(tzinfo=None)
    except (ValueError, OverflowError):
        return None


@lru_cache(maxsize=256)
def _offset(offset: str | None) -> timezone:
    """The fixed zone of an ISO offset ("Z", "+01:00", "-0530", "+02"; None: UTC)."""
    if offset is None or offset == "Z":
        return timezone.utc
    digits = offset[1:].replace(":", "")
    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
    return timezone(-delta if offset[0] == "-" else delta)


def _placeholder(file_name: str) -> str:
    """The WhatsApp-worded placeholder of an attachment, by its file name (or URL)."""
    name = file_name.rsplit("/", 1)[-1].split("?", 1)[0].lower()
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext == "gif":
        return GIF
    if ext in _IMAGE_EXT:
        return IMAGE
    if ext in _VIDEO_EXT:
        return VIDEO
    if ext in _AUDIO_EXT:
        return VOICE if name.startswith("voice-message") else AUDIO
    return DOCUMENT


def _body(placeholders: list[str], text: str) -> str:
    return "\n".join([*placeholders, text]) if text else "\n".join(placeholders)


# ------------------------------------------------------------------------------------------------ DiscordChatExporter


class _Exporter:
    """One DiscordChatExporter file's chat: author names, markup and records."""

    def __init__(self, channel_id: str | None, channel_name: str | None, zone: tzinfo, skips: ChatSkips) -> None:
        self.channel_id, self.channel_name, self.zone, self.skips = channel_id, channel_name, zone, skips
        self.ignored: Counter = Counter()
        self.bots: set[str] = set()
        self.bot_messages = 0
        self.usernames: dict[str, str] = {}
        self.labels: dict[str, str] = {}  # author key (id, else name) → the author's name in the chat

    def name_authors(self, messages: list) -> None:
        """Every author's name in the chat (first pass): nickname, else username; "Nick (username)" for a name
        two accounts show."""
        seen: dict[str, tuple[str, str]] = {}
        for m in messages:
            author = m.get("author") if isinstance(m, dict) else None
            if isinstance(author, dict):
                names = _author_names(author)
                if names is not None:
                    seen.setdefault(names[0], names[1:])
        shown = Counter(display for display, _ in seen.values())
        for key, (display, username) in seen.items():
            label = f"{display} ({username})" if shown[display] > 1 and display != username else display
            self.labels[key] = label
            self.usernames.setdefault(label, username)

    def author(self, author: object) -> str | None:
        if not isinstance(author, dict):
            return None
        own_id = author.get("id")
        if isinstance(own_id, str) and own_id in self.labels:  # named in the first pass
            return self.labels[own_id]
        names = _author_names(author)
        return None if names is None else self.labels.get(names[0], names[1])

    def record(self, message: object, number: int) -> SourceMessage | None:
        skip = self.skips.skip
        if isinstance(message, _BadRow):
            skip("discord_malformed_message", f"position-{number}", message.detail)
            return None
        if not isinstance(message, dict):
            skip("discord_malformed_message", number, f"a {type(message).__name__}, not an object")
            return None
        own_id = _id(message.get("id"))
        locator = own_id or f"position-{number}"
        written = message.get("timestamp")
        if isinstance(written, _UnreadDate):  # a CSV's or PlainText's date that does not read, and why
            skip("discord_bad_timestamp", locator, written.detail)
            return None
        # a datetime: the local time a CSV or PlainText export wrote, already read (JSON holds none)
        timestamp = written if isinstance(written, datetime) else _timestamp(written, self.zone)
        if timestamp is None:
            skip("discord_bad_timestamp", locator, repr(written)[:60])
            return None
        author = self.author(message.get("author"))
        if author is None:
            skip("discord_malformed_message", locator, f"author is {_what(message.get('author'))}")
            return None
        content = message.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            skip("discord_malformed_message", locator, f"content is {_what(content)}")
            return None
        placeholders, bad = _media(message)
        if bad:
            skip("discord_malformed_message", locator, bad)
            return None
        text = self.plain(content, message).strip()
        kind_name = message.get("type")
        kind_name = str(kind_name) if isinstance(kind_name, (str, int)) and not isinstance(kind_name, bool) else ""
        if _is_system(kind_name):
            return SourceMessage(own_id or f"position-{number}", timestamp, None,
                                 self.system_text(kind_name, author, text, message), "system")
        reply_to, forwarded = self.reference(message, kind_name)
        forward = message.get("forwardedMessage")
        if forward is not None:
            forwarded = True
            if isinstance(forward, dict):
                more, bad = _media(forward)
                if bad:
                    self.ignored["forwardedMessage"] += 1
                placeholders += more
                inner = forward.get("content")
                inner = self.plain(inner, forward).strip() if isinstance(inner, str) else ""
                text = "\n".join(t for t in (text, inner) if t)
            else:
                self.ignored["forwardedMessage"] += 1
        if not text and not placeholders:
            text = _embeds_text(message.get("embeds"))
        if not text and not placeholders:
            skip("discord_empty_message", locator, "no text, attachment, sticker or embed")
            return None
        author_dict = message["author"]
        if author_dict.get("isBot") is True:
            self.bots.add(author)
            self.bot_messages += 1
        elif "isBot" in author_dict and not isinstance(author_dict["isBot"], bool):
            self.ignored["author.isBot"] += 1
        source_id = own_id or f"position-{number}"
        if placeholders:
            return SourceMessage(source_id, timestamp, author, _body(placeholders, text), "media", reply_to,
                                 forwarded)
        edited = message.get("timestampEdited")
        if edited is not None and not isinstance(edited, str):
            self.ignored["timestampEdited"] += 1
        kind = "edited" if isinstance(edited, str) and edited else "text"
        return SourceMessage(source_id, timestamp, author, text, kind, reply_to, forwarded)

    def reference(self, message: dict, kind_name: str) -> tuple[str | None, bool]:
        """The replied message's source id (a reply's only: a pin's or a crosspost's reference is none) and
        whether the message is a forward."""
        ref = message.get("reference")
        if ref is None:
            return None, False
        if not isinstance(ref, dict):
            self.ignored["reference"] += 1
            return None, False
        if ref.get("type") == "Forward":
            return None, True
        if kind_name not in ("Reply", "19"):
            return None, False
        target = _id(ref.get("messageId"))
        if target is None:
            self.ignored["reference.messageId"] += 1
            return None, False
        channel = _id(ref.get("channelId"))
        if channel is not None and self.channel_id is not None and channel != self.channel_id:
            return f"{channel}/{target}", False  # another channel's message: never one of this chat's ids
        return target, False

    def plain(self, content: str, message: dict) -> str:
        """`content` with raw Discord markup made readable (rendered exports have none: returned as they are)."""
        content = without_surrogates(content)
        if "<" not in content:
            return content
        mentioned: dict[str, str] = {}
        mentions = message.get("mentions")
        if isinstance(mentions, list):
            for user in mentions:
                names = _author_names(user) if isinstance(user, dict) else None
                if names is not None:
                    mentioned[names[0]] = self.labels.get(names[0], names[1])
        elif mentions is not None:
            self.ignored["mentions"] += 1

        def readable(m: re.Match) -> str:
            emoji, user, role, channel, stamp = m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)
            if emoji is not None:
                return f":{emoji}:"
            if user is not None:
                name = mentioned.get(user) or self.labels.get(user)
                return f"@{name}" if name else m.group(0)
            if role is not None:
                return "@role"
            if channel is not None:
                return f"#{self.channel_name}" if channel == self.channel_id and self.channel_name else "#channel"
            try:
                when = datetime.fromtimestamp(int(stamp), self.zone)
            except (ValueError, OverflowError, OSError):
                return m.group(0)
            return when.strftime("%Y-%m-%d %H:%M")

        return _MARKUP.sub(readable, content)

    def system_text(self, kind_name: str, author: str, text: str, message: dict) -> str:
        """"<author> <what happened>": DiscordChatExporter's own sentence when it wrote one, else a wording of the
        kind (with an old export's raw content: a new channel name, a thread's name)."""
        if text and _FALLBACK.match(text):
            return f"{author} {text[0].lower()}{text[1:]}"
        what = _SYSTEM_KINDS.get(kind_name, f"system message ({kind_name})" if kind_name else "system message")
        if kind_name == "Call":
            start = _timestamp(message.get("timestamp"), timezone.utc)
            end = _timestamp(message.get("callEndedTimestamp"), timezone.utc)
            if start is not None and end is not None and end >= start:
                minutes = round((end - start).total_seconds() / 60)
                what = f"started a call that lasted {minutes} minute{'' if minutes == 1 else 's'}"
        elif kind_name in ("RecipientAdd", "RecipientRemove"):
            mentions = message.get("mentions")
            first = mentions[0] if isinstance(mentions, list) and mentions else None
            names = _author_names(first) if isinstance(first, dict) else None
            if names is not None:
                who = self.labels.get(names[0], names[1])
                what = (f"added {who} to the group" if kind_name == "RecipientAdd"
                        else "left the group" if who == author else f"removed {who} from the group")
        return f"{author} {what}: {text}" if text else f"{author} {what}."


def _media(message: dict) -> tuple[list[str], str]:
    """One placeholder per attachment and sticker, and what is malformed ("" when nothing is)."""
    found: list[str] = []
    for key in ("attachments", "stickers"):
        items = message.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            return found, f"{key} is {_what(items)}"
        if not all(isinstance(i, dict) for i in items):
            return found, f"{key} holds something other than objects"
        if key == "stickers":
            found += [STICKER] * len(items)
            continue
        for item in items:
            name = item.get("fileName") if isinstance(item.get("fileName"), str) else item.get("url")
            found.append(_placeholder(name) if isinstance(name, str) else DOCUMENT)
    return found, ""


def _author_names(author: dict) -> tuple[str, str, str] | None:
    """(key, display name, username) of an author or mentioned user; None without a usable name."""
    username = author.get("name")
    nickname = author.get("nickname")
    username = without_surrogates(username.strip()) if isinstance(username, str) and username.strip() else None
    nickname = without_surrogates(nickname.strip()) if isinstance(nickname, str) and nickname.strip() else None
    if username is None and nickname is None:
        return None
    username = username or nickname
    key = _id(author.get("id")) or f"name:{username}"
    return key, nickname or username, username


def _is_system(kind_name: str) -> bool:
    if kind_name in _SYSTEM_KINDS:
        return True
    return kind_name.isdigit() and 1 <= int(kind_name) <= 18  # kinds DiscordChatExporter has no name for


def _what(value: object) -> str:
    return "missing" if value is None else f"a {type(value).__name__}"


def _embeds_text(embeds: object) -> str:
    """The title, description and fields of a message's embeds (a bot's card), as lines."""
    if not isinstance(embeds, list):
        return ""
    lines = []
    for embed in embeds:
        if not isinstance(embed, dict):
            continue
        for key in ("title", "description"):
            if isinstance(embed.get(key), str) and embed[key].strip():
                lines.append(embed[key].strip())
        fields = embed.get("fields")
        for field in fields if isinstance(fields, list) else []:
            if isinstance(field, dict) and isinstance(field.get("name"), str) and isinstance(field.get("value"), str):
                lines.append(f"{field['name'].strip()}: {field['value'].strip()}")
    return without_surrogates("\n".join(lines))


def _read_exporter(pieces: list[tuple[Path, str, dict]], zone: tzinfo, skips: SkipCounter) -> WhatsAppChat:
    """One chat of DiscordChatExporter's `pieces` (path, sha256, JSON shape): a file, or the parts of a partitioned
    export, read as one (the first part names it)."""
    for piece_path, _, piece in pieces:
        if not isinstance(piece.get("messages"), list) or not isinstance(piece.get("channel"), dict):
            what = "messages" if not isinstance(piece.get("messages"), list) else "channel"
            raise InputFileError(
                f"{piece_path}: JSON with DiscordChatExporter's keys but '{what}' is {_what(piece.get(what))}, "
                "not a complete DiscordChatExporter export"
            )
    path, _, data = pieces[0]
    messages = [m for _, _, piece in pieces for m in piece["messages"]]
    digest = combined_sha256([d for _, d, _ in pieces])
    channel = data["channel"]
    guild = data.get("guild") if isinstance(data.get("guild"), dict) else {}
    chat_type = without_surrogates(channel["type"]) if isinstance(channel.get("type"), str) else None
    guild_name = without_surrogates(guild["name"]) if isinstance(guild.get("name"), str) else None
    channel_id = _id(channel.get("id"))
    own_id = channel_id or path.stem
    channel_name = without_surrogates(channel["name"]) if isinstance(channel.get("name"), str) else None
    direct = chat_type in ("DirectTextChat", "DirectGroupTextChat") or _id(guild.get("id")) == "0"
    name = f"{channel_name} in {guild_name}" if channel_name and guild_name and not direct else channel_name
    reader = _Exporter(channel_id, channel_name, zone, ChatSkips(skips, f"{path}:{name or own_id}"))
    reader.name_authors(messages)
    records = [r for r in (reader.record(m, i) for i, m in enumerate(messages)) if r is not None]
    extra = {
        "chat_type": chat_type,
        "source_chat_id": own_id,
        "guild": guild_name,
        "guild_id": _id(guild.get("id")),
        "category": without_surrogates(channel["category"]) if isinstance(channel.get("category"), str) else None,
        "usernames": reader.usernames,
        "bots": sorted(reader.bots),
        "bot_messages": reader.bot_messages,
        "ignored_fields": dict(reader.ignored),
        "own_messages_only": False,
        **data.get("_read", {}),  # what reading a CSV or PlainText export found (its form, its dates)
    }
    if len(pieces) > 1:
        extra["parts"] = [p.name for p, _, _ in pieces]
    declared = [piece["messageCount"] for _, _, piece in pieces if isinstance(piece.get("messageCount"), int)]
    if declared and sum(declared) != len(messages):
        extra["message_count_declared"] = sum(declared)
    return build_chat(records, chat_id=chat_id_for(digest, own_id), path=path, source=SOURCE, name=name,
                      skipped=dict(reader.skips.counts), extra=extra)


# ------------------------------------------------------------------------------------------------ data package


def _read_package_file(path: Path, skips: SkipCounter, zone: tzinfo, owner: str, digest: str | None = None,
                       data: list | None = None, *, raw: bytes | None = None,
                       archive: ExportArchive | None = None) -> WhatsAppChat:
    """One channel of a data package: every message the owner's own. `raw`: the file's bytes when already read;
    `archive`: the package's zip, where the file and its channel.json and index.json are read."""
    if raw is None and (data is None or digest is None):
        raw = read_export_bytes(path) if archive is None else archive.read_bytes(path)
    digest = digest or hashlib.sha256(raw).hexdigest()
    folder = _CHANNEL_FOLDER.fullmatch(path.parent.name)
    channel = _package_channel(path.parent / "channel.json", archive)
    own_id = _id(channel.get("id")) or (folder.group(1) if folder else path.parent.name or path.stem)
    name = _package_name(path.parent.parent / "index.json", own_id, channel, archive)
    chat_skips = ChatSkips(skips, f"{path}:{name or own_id}")
    if path.name.lower().endswith(".csv"):
        rows, form = _csv_rows(path, chat_skips, raw), "csv"
    else:
        rows, form = (data if data is not None else _package_json(path, raw)), "json"
    records = []
    for number, row in enumerate(rows):
        record = _package_record(row, number, zone, owner, chat_skips)
        if record is not None:
            records.append(record)
    guild = channel.get("guild") if isinstance(channel.get("guild"), dict) else {}
    kind = channel.get("type")
    extra = {
        "chat_type": str(kind) if isinstance(kind, (str, int)) and not isinstance(kind, bool) else None,
        "source_chat_id": own_id,
        "guild": without_surrogates(guild["name"]) if isinstance(guild.get("name"), str) else None,
        "guild_id": _id(guild.get("id")),
        "own_messages_only": True,  # the package holds the owner's messages only: no replies to train on
        "package_form": form,
    }
    return build_chat(records, chat_id=chat_id_for(digest, own_id), path=path, source=SOURCE, name=name,
                      skipped=dict(chat_skips.counts), extra=extra)


def _package_json(path: Path, raw: bytes | None = None) -> list:
    data = read_export_json(path, _WHAT, raw)
    if not isinstance(data, list):
        found = ", ".join(map(str, list(data)[:6])) if isinstance(data, dict) else type(data).__name__
        raise InputFileError(f"{path}: a data package's messages.json should be an array of messages (found "
                             f"{found}), not a Discord export")
    return data


def _metadata_bytes(path: Path, archive: ExportArchive | None) -> bytes | None:
    """A package's channel.json or index.json, None when it is not there."""
    if archive is not None:
        return archive.read_bytes(path) if archive.is_file(path) else None
    return path.read_bytes() if path.is_file() else None


def _package_channel(path: Path, archive: ExportArchive | None = None) -> dict:
    """A channel folder's `channel.json`, or {} when it is missing or unreadable (logged: names only)."""
    try:
        raw = _metadata_bytes(path, archive)
        if raw is None:
            return {}
        data = json.loads(raw.decode("utf-8-sig"), strict=False)
    except UnsafeArchiveError:
        raise
    except (OSError, ValueError, RecursionError) as e:  # a member that does not inflate is an InputFileError
        log.warning("%s: unreadable (%s), the channel is read without its name", path, str(e)[:80])
        return {}
    return data if isinstance(data, dict) else {}


def _package_name(index_path: Path, own_id: str, channel: dict, archive: ExportArchive | None = None) -> str | None:
    """The channel's name: `messages/index.json`'s ("general in My Server"), else from `channel.json`."""
    try:
        raw = _metadata_bytes(index_path, archive)
        index = json.loads(raw.decode("utf-8-sig"), strict=False) if raw is not None else None
    except UnsafeArchiveError:
        raise
    except (OSError, ValueError, RecursionError) as e:
        log.warning("%s: unreadable (%s), channel names come from channel.json", index_path, str(e)[:80])
        index = None
    name = index.get(own_id) if isinstance(index, dict) else None
    if isinstance(name, str) and name.strip() and name != "None":
        return without_surrogates(name.strip())
    name = channel.get("name") if isinstance(channel.get("name"), str) and channel["name"].strip() else None
    guild = channel.get("guild") if isinstance(channel.get("guild"), dict) else {}
    if name and isinstance(guild.get("name"), str):
        return without_surrogates(f"{name} in {guild['name']}")
    return without_surrogates(name) if name else None


def _csv_rows(path: Path, skips: ChatSkips, raw: bytes | None = None) -> list:
    """The rows of an old package's `messages.csv` as dicts keyed by its header; a row with the wrong number of
    fields is skipped, counted. A file cut inside a quoted field is refused, naming the line."""
    text = read_export_text(path, _WHAT, raw)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None or [h.strip().lower() for h in header] != [h.lower() for h in _CSV_HEADER]:
            shown = ",".join(header or [])[:60]
            raise InputFileError(f"{path}: a CSV whose header is not ID,Timestamp,Contents,Attachments "
                                 f"(a data package's messages.csv) nor {','.join(_EXPORTER_CSV_HEADER)} "
                                 f"(DiscordChatExporter's) (found {shown!r}), not a Discord export")
        rows = []
        for row in reader:
            if not row:
                continue
            if len(row) != len(_CSV_HEADER):
                skips.skip("discord_malformed_message", f"line {reader.line_num}",
                           f"{len(row)} fields, not {len(_CSV_HEADER)}")
                continue
            rows.append(dict(zip(_CSV_HEADER, row, strict=True)))
        return rows
    except csv.Error as e:
        early = "; it ends early (a cut copy?)" if "end" in str(e).lower() else ""
        raise InputFileError(f"{path}: not valid CSV (line {reader.line_num}: {e}){early}, "
                             "not a Discord data package's messages.csv") from None


def _package_record(row: object, number: int, zone: tzinfo, owner: str, skips: ChatSkips) -> SourceMessage | None:
    if not isinstance(row, dict):
        skips.skip("discord_malformed_message", number, f"a {type(row).__name__}, not an object")
        return None
    own_id = _id(row.get("ID"))
    locator = own_id or f"position-{number}"
    timestamp = _timestamp(row.get("Timestamp"), zone)
    if timestamp is None:
        skips.skip("discord_bad_timestamp", locator, repr(row.get("Timestamp"))[:60])
        return None
    contents = row.get("Contents")
    contents = "" if contents is None else contents
    attachments = row.get("Attachments")
    attachments = "" if attachments is None else attachments
    if isinstance(attachments, list) and all(isinstance(a, str) for a in attachments):
        attachments = " ".join(attachments)
    for field, value in (("Contents", contents), ("Attachments", attachments)):
        if not isinstance(value, str):
            skips.skip("discord_malformed_message", locator, f"{field} is {_what(value)}")
            return None
    text = without_surrogates(contents).strip()
    placeholders = [_placeholder(url) for url in attachments.split()]
    if not text and not placeholders:
        skips.skip("discord_empty_message", locator, "no text or attachment")
        return None
    source_id = own_id or f"position-{number}"
    if placeholders:
        return SourceMessage(source_id, timestamp, owner, _body(placeholders, text), "media")
    return SourceMessage(source_id, timestamp, owner, text, "text")


# ------------------------------------------------------------------------------------------------ CSV and PlainText


@dataclass(frozen=True)
class _CsvForm:
    """Which of DiscordChatExporter's CSV headers a file has, its separator, and whether every field (the header's
    too) is followed by one (`;` files, before 2019-12)."""

    header: tuple[str, ...]
    separator: str
    trailing: bool


def _exporter_csv_form(head: str) -> _CsvForm | None:
    """The form of a DiscordChatExporter CSV from the start of its text; None for any other CSV."""
    first = head.lstrip("\ufeff").split("\n", 1)[0].strip()
    for separator in (",", ";"):
        fields = tuple(h.strip().strip('"').strip() for h in first.split(separator))
        trailing = len(fields) > 1 and fields[-1] == ""
        header = fields[:-1] if trailing else fields
        if header in _EXPORTER_CSV_HEADERS:
            return _CsvForm(header, separator, trailing)
    return None


def _is_exporter_csv(head: str) -> bool:
    return _exporter_csv_form(head) is not None


@dataclass(frozen=True)
class _BadRow:
    """A CSV row that cannot be a message (the wrong number of fields): what is wrong, for the reader to skip and
    count it."""

    detail: str


def _exporter_csv(path: Path, text: str) -> dict:
    """DiscordChatExporter's CSV, of any of its forms (`_CsvForm`), in its JSON shape (see `_as_exporter`); a row
    with the wrong number of fields becomes a `_BadRow` naming its row and line. A file cut inside a quoted field is
    refused."""
    form = _exporter_csv_form(text[:1000])  # a header is one short line
    if form is None:
        shown = text.lstrip("\ufeff").split("\n", 1)[0].strip()[:60]
        raise InputFileError(f"{path}: a CSV whose header is not {','.join(_EXPORTER_CSV_HEADER)} (or an older "
                             f"DiscordChatExporter's) (found {shown!r}), not a DiscordChatExporter export")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=form.separator, strict=True)
    rows: list[tuple[int, list[str]]] = []  # (the line a row starts on, its fields)
    try:
        next(reader)  # the header, read above
        previous = reader.line_num
        for row in reader:
            if row:
                rows.append((previous + 1, row))
            previous = reader.line_num
    except csv.Error as e:
        early = "; it ends early (a cut copy?)" if "end" in str(e).lower() else ""
        raise InputFileError(f"{path}: not valid CSV (line {reader.line_num}: {e}){early}, "
                             "not a DiscordChatExporter export") from None
    messages: list = []
    width = len(form.header)
    for number, (line, row) in enumerate(rows, 1):
        if form.trailing and len(row) > 1 and row[-1] == "":
            row = row[:-1]  # the `;` after the last field
        if len(row) != width:
            messages.append(_BadRow(f"row {number} (line {line}) has {len(row)} fields, not the header's {width} "
                                    f"({form.separator.join(form.header)})"))
            continue
        field = dict(zip(form.header, row, strict=True))
        urls = [u for u in field["Attachments"].split(",") if u.strip()]
        messages.append({"date": field["Date"], "line": line,
                         "author": {"id": field.get("AuthorID", "").strip() or None,
                                                          "fullName": field["Author"]},
                         "content": field["Content"], "attachments": [{"url": u.strip()} for u in urls]})
    return _as_exporter(path, messages, "csv", {})


def _exporter_text(path: Path, text: str) -> dict:
    """DiscordChatExporter's PlainText export in its JSON shape (see `_as_exporter` and the module's docstring)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) < 3 or lines[0] != _RULE or not lines[1].startswith("Guild: "):
        raise InputFileError(f"{path}: a text file that does not start with DiscordChatExporter's header (a line of "
                             "62 '=', then 'Guild: …'), not a Discord export")
    try:
        close = lines.index(_RULE, 1)
    except ValueError:
        raise InputFileError(f"{path}: DiscordChatExporter's header is never closed by a line of 62 '=' (a cut "
                             "copy?), not a complete Discord export") from None
    header = {}
    for line in lines[1:close]:
        key, _, value = line.partition(": ")
        header.setdefault(key, value)
    body = lines[close + 1:]
    while body and not body[-1].strip():
        body.pop()
    declared = None
    if len(body) >= 3 and body[-1] == body[-3] == _RULE and body[-2].startswith("Exported "):
        digits = re.sub(r"\D", "", body[-2])
        declared, body = (int(digits) if digits else None), body[:-3]
    found = [(i, m) for i, line in enumerate(body)
             if (i == 0 or not body[i - 1].strip()) and (m := _TEXT_HEADER.fullmatch(line)) is not None
             and _WrittenTimes.reads(m.group(1))]
    before = [line for line in body[:found[0][0] if found else len(body)] if line.strip()]
    if before and not found:
        raise InputFileError(f"{path}: no message header ('[<date>] <author>' after an empty line, its date in a "
                             f"format DiscordChatExporter writes) under its header; first line {before[0][:60]!r}")
    messages = []
    for (start, m), end in zip(found, [i for i, _ in found[1:]] + [len(body)], strict=True):
        content, blocks = _text_message(body[start + 1:end])
        embeds = [line for line in blocks.get("{Embed}", []) if not _URL.fullmatch(line)]
        messages.append({"date": m.group(1), "line": close + 2 + start,  # the header's line in the file
                         "author": {"id": None, "fullName": m.group(2)}, "content": content,
                         "attachments": [{"url": u} for u in blocks.get("{Attachments}", [])],
                         "stickers": [{"name": "sticker"} for _ in blocks.get("{Stickers}", [])],
                         "embeds": [{"description": "\n".join(embeds)}] if embeds else []})
    channel = header.get("Channel", "")
    category, _, name = channel.rpartition(" / ")  # "Category / name" since 2023, the name alone before
    guild = header.get("Guild")
    return _as_exporter(path, messages, "text", {
        "guild": {"id": "0" if guild == "Direct Messages" else None, "name": guild},
        "channel": {"name": name or None, "category": category or None},
        **({"messageCount": declared} if declared is not None else {}),
        **({"_read": {"unread_lines": len(before)}} if before else {})})


def _text_message(lines: list[str]) -> tuple[str, dict[str, list[str]]]:
    """A PlainText message's content (the lines after its header, up to its first block) and blocks
    ({Attachments}, {Embed}, {Stickers}, {Reactions} → their lines, each block ended by an empty line)."""
    first = next((i for i, line in enumerate(lines) if line in _TEXT_BLOCKS and (i == 0 or not lines[i - 1].strip())),
                 len(lines))
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[first:]:
        if not line.strip():
            current = None
        elif current is None and line in _TEXT_BLOCKS:
            current = blocks.setdefault(line, [])
        elif current is not None:
            current.append(line.strip())
    return "\n".join(lines[:first]).strip("\n"), blocks


def _as_exporter(path: Path, rows: list, form: str, shape: dict) -> dict:
    """The JSON shape of a CSV or PlainText export: `rows` ({date, author {id, fullName}, content, attachments…}, or
    a malformed row as a `_BadRow`) become messages of the kind their sentence tells, times read in the file's
    format, authors without their discriminator; `shape` holds what the file says of guild and channel. The
    channel's id (and, without a PlainText header, its name) come from the default file name "<guild> - <category>
    - <channel> [<channel id>]"."""
    times = _WrittenTimes([r["date"] for r in rows if isinstance(r, dict)], path)
    messages = []
    for r in rows:
        if not isinstance(r, dict):
            messages.append(r)
            continue
        full = r["author"]["fullName"].strip()
        content = r["content"]
        kind = next((k for pattern, k in _SYSTEM_SENTENCES if pattern.fullmatch(content.strip())), "Default")
        messages.append({"type": kind, "timestamp": times.value(r["date"], r["line"]), "content": content,
                         "author": {"id": r["author"]["id"], "name": full, "nickname": _DISCRIMINATOR.sub("", full)},
                         **{k: r[k] for k in ("attachments", "stickers", "embeds") if k in r}})
    stem = _partition(path)[0]
    named = _FILE_CHANNEL_ID.fullmatch(stem)
    channel = shape.get("channel") or {"name": named.group(1) if named else stem}
    channel = {"id": named.group(2) if named else None, **channel}
    read = {"export_form": form, **shape.pop("_read", {})}
    if times.pattern is not None:
        read["date_pattern"] = times.pattern.describe()
        if times.pattern.buddhist:
            read["buddhist_era"] = True
        if times.pattern.order is not None:
            read.update(date_order=times.pattern.order, date_order_ambiguous=times.pattern.ambiguous)
        if times.pattern.languages:
            read["date_languages"] = list(times.pattern.languages)
    if not times.exact:
        read["exact_timestamps"] = False
    return {**shape, "guild": shape.get("guild", {}), "channel": channel, "messages": messages, "_read": read}


class _WrittenTimes:
    """The times of one CSV or PlainText export as DiscordChatExporter wrote them (see the module's docstring): ISO
    8601 with an offset, and a Unix time (as ISO), kept as text for the reader to write in `tz` as the JSON's; a
    locale's (or a user's own) date and time read into the naive local time written, by the one pattern found from
    all of the file's dates (`_DatePattern`); a date that does not read says why."""

    def __init__(self, written: list[str], path: Path | None = None, this_year: int | None = None) -> None:
        this_year = this_year or datetime.now(timezone.utc).year
        seen = Counter(written)
        by_shape: dict[_DateShape, list[_WrittenDate]] = {}
        for text in seen:
            if not _is_iso(text) and not _EPOCH_TIME.fullmatch(text) and (date := _WrittenDate.read(text)):
                by_shape.setdefault(date.shape, []).append(date)
        # a pattern for each shape of the file's dates: the file's is the one that reads the most of them (the first
        # of equals), and it reads no date of another shape
        self.pattern: _DatePattern | None = None
        self._read: dict[str, datetime | str] = {}  # a local date's text → its time, or why it does not read
        most = -1
        for shape, dates in by_shape.items():
            pattern = _DatePattern.infer(shape, dates, this_year)
            read = {d.text: pattern.read(d, this_year) for d in dates}
            count = sum(seen[text] for text, moment in read.items() if isinstance(moment, datetime))
            if count > most:
                self.pattern, most, self._read = pattern, count, read
        for shape, dates in by_shape.items():
            if shape != self.pattern.shape:
                other = f"is not written as the file's other dates ({self.pattern.describe()})"
                self._read.update((d.text, other) for d in dates)
        if self.pattern is not None:
            self.pattern.log(path)
        # a locale's time is to the minute, in no known zone; ISO and Unix times are exact
        self.exact = not by_shape

    @staticmethod
    def reads(text: str) -> bool:
        """Whether `text` is written as one of the time formats (not whether it is a real date)."""
        return _WrittenDate.read(text) is not None or _EPOCH_TIME.fullmatch(text) is not None or _is_iso(text)

    def value(self, text: str, line: int) -> datetime | str | _UnreadDate:
        """What the message's `timestamp` holds: an ISO text as it is (a Unix time written as one), else the local
        time read, else an `_UnreadDate` saying why it does not read (the reader skips it as a bad timestamp)."""
        if _is_iso(text):
            return text
        if m := _EPOCH_TIME.fullmatch(text):
            try:
                moment = datetime.fromtimestamp(int(m.group(1)) / (1000 if len(m.group(1)) == 13 else 1),
                                                timezone.utc)
            except (OverflowError, OSError, ValueError):
                return _UnreadDate(text, line, "is no Unix time")
            return moment.isoformat()
        local = self._read.get(text, "is no date and time DiscordChatExporter writes")
        return local if isinstance(local, datetime) else _UnreadDate(text, line, local)


@dataclass(frozen=True)
class _UnreadDate:
    """A CSV or PlainText date that does not read, held as its message's timestamp for the reader to skip the
    message, saying where and why."""

    written: str
    line: int
    reason: str

    @property
    def detail(self) -> str:
        return f"line {self.line}: {self.written[:60]!r} {self.reason}"


@dataclass(frozen=True)
class _DateShape:
    """What every date written in one pattern shares: its fields' kinds ("a" a month's name, "4" a number of three
    or four digits, "2" of one or two), the separators between and after them, its clock, which comes first, and
    where its weekday is."""

    weekday: str | None  # what follows a weekday before the date (", " or " "), None without one
    kinds: tuple[str, str, str]
    separators: tuple[str, str, str]  # after the first field, after the second, after the third
    clock: str  # between hour and minute: ":", "." or "h" (fr-CA's "18 h 02")
    seconds: bool
    designator: str | None  # a 12-hour clock's "before" the time (ko, zh-TW, ja) or "after" it; None: 24 hours
    time_first: bool = False  # the time before the date ("18:02 14.03.2024"), as some users' own formats write it
    # what comes before a weekday after the date (" ": ko, tr, hu; "" right after ja's and zh's 日), None without one
    late_weekday: str | None = None

    @property
    def named_weekday(self) -> bool:
        return self.weekday is not None or self.late_weekday is not None


@dataclass(frozen=True)
class _WrittenDate:
    """A local date and time as written, cut into its parts: which of `fields` is the day, the month and the year
    is decided for the whole file (`_DatePattern`)."""

    text: str
    shape: _DateShape
    weekday: str | None  # as written, before the date or after it
    fields: tuple[str, str, str]  # digits, or a month's name
    hour: int
    minute: int
    second: int
    afternoon: bool | None  # None: a 24-hour clock

    @staticmethod
    def read(text: str) -> _WrittenDate | None:
        """`text` cut into its parts; None for no local date and time (a word before a date that is no weekday
        read here is none: "[on 14 Mar 2024 18:00]"; nor is a date with a weekday on both sides)."""
        m = _LOCAL_TIME.fullmatch(text) or _TIME_FIRST.fullmatch(text)
        if m is None:
            return None
        fields = (m["f0"], m["f1"], m["f2"])
        kinds = tuple("a" if f[0].isalpha() else "4" if len(f) > 2 else "2" for f in fields)
        weekday = m["weekday"] or m["late_weekday"]
        if (kinds.count("a") > 1 or (m["weekday"] and m["late_weekday"])
                or (weekday is not None and _name_key(weekday) not in _WEEKDAYS)):
            return None  # words, not a date ("[Meet you 2024 18:00]")
        separators = (_SPACES.sub(" ", m["s0"]), _SPACES.sub(" ", m["s1"]), _SPACES.sub(" ", m["end"]))
        designator = m["before"] or m["after"]
        shape = _DateShape(m["after_weekday"] and _SPACES.sub(" ", m["after_weekday"]), kinds, separators,
                           "h" if "h" in m["clock"].lower() else m["clock"], m["second"] is not None,
                           None if designator is None else "before" if m["before"] else "after",
                           m.re is _TIME_FIRST,
                           m["late_weekday"] and _SPACES.sub(" ", m["before_late_weekday"]))
        afternoon = None if designator is None else _DESIGNATORS[_designator_key(designator)]
        return _WrittenDate(text, shape, weekday, fields, int(m["hour"]), int(m["minute"]),
                            int(m["second"] or 0), afternoon)


def _year_of(written: str, this_year: int) -> tuple[int, bool] | None:
    """The Gregorian year a date's year field stands for, and whether it was written in the Thai Buddhist era; None
    for a year no Discord message has. The rule: a year from 2015 (Discord's first) to next year is Gregorian; a
    year that is none of these but, less 543, is one (2558 to 2570 in 2026: over 500 years ahead) is of the
    Buddhist era; any other year is none. Two digits are a year of this century, or of the Buddhist era's 2500s
    when this century's is none."""
    if not written.isdigit():
        return None
    number = int(written)
    for year in (number,) if len(written) > 2 else (2000 + number, 2500 + number):
        if _DISCORD_FIRST_YEAR <= year <= this_year + 1:
            return year, False
        if _DISCORD_FIRST_YEAR <= year - _BUDDHIST_ERA <= this_year + 1:
            return year - _BUDDHIST_ERA, True
    return None


@dataclass(frozen=True)
class _DatePattern:
    """Which of a date shape's fields are the year, the month and the day, whether the years are of the Thai
    Buddhist era, and in which language its names are: decided once (`infer`) from all of a file's dates of that
    shape, as WhatsApp's date order is."""

    shape: _DateShape
    year: int  # the year's field (0, 1 or 2)
    month: int
    day: int
    buddhist: bool
    order: str | None  # `stats["date_order"]`: "day_first" or "month_first" for two numbers before the year
    ambiguous: bool | None  # True when no number over 12 told that order, or numbers over 12 in both places
    assumed: tuple[str, ...]  # what was assumed for lack of evidence, for the log (none when the dates told all)
    # the languages whose month and weekday names read the most of the file's dates, in `_LANGUAGES`' order ("Mar"
    # alone is English, Spanish, Polish…); none for dates of numbers alone, or of no name read here
    languages: tuple[str, ...] = ()

    @staticmethod
    def infer(shape: _DateShape, dates: list[_WrittenDate], this_year: int) -> _DatePattern:
        """The year is the field of four digits, else the one field whose every value is a year a message can
        have (14 is none: "24/03/14" is year first), else the last; a month's name is the month; of two numbers
        left, one over 12 anywhere in the file is the day. Without one (or with days over 12 in both places), the
        default: year, month, day for a year first, month first with a designator after the time (as en-US writes
        it), else day first. The names' language is the one that has the names of the most dates."""
        numbers = [i for i, kind in enumerate(shape.kinds) if kind != "a"]
        names = [i for i, kind in enumerate(shape.kinds) if kind == "a"]
        wide = [i for i in numbers if shape.kinds[i] == "4"]
        years = [i for i in numbers if all(_year_of(d.fields[i], this_year) for d in dates)]
        year = wide[0] if wide else years[0] if len(years) == 1 else numbers[-1]  # a date has one name at most
        # DiscordChatExporter's own "dd-MMM-yy" puts a two-digit year last: only numbers alone leave it in doubt
        assumed = [] if wide or len(years) == 1 or names else [
            f"{'more than one field' if years else 'no field'} could be the year in every date: read the year last"]
        first, second = (i for i in range(3) if i != year)
        order = ambiguous = None
        if names:
            month = names[0]
            day = second if month == first else first
        else:
            over_first = any(int(d.fields[first]) > 12 for d in dates)
            over_second = any(int(d.fields[second]) > 12 for d in dates)
            day_first = over_first if over_first != over_second else year != 0 and shape.designator != "after"
            day, month = (first, second) if day_first else (second, first)
            if over_first == over_second:
                told = ("days over 12 in both places (dates of two orders)" if over_first
                        else "no day or month over 12 in its dates")
                assumed.append(f"{told}: read {'day' if day_first else 'month'} first")
            if year != 0:
                order, ambiguous = ("day_first" if day_first else "month_first"), over_first == over_second
        eras = {found[1] for d in dates if (found := _year_of(d.fields[year], this_year))}
        languages = _languages_of(dates, month if names else None) if names or shape.named_weekday else ()
        return _DatePattern(shape, year, month, day, eras == {True}, order, ambiguous, tuple(assumed), languages)

    def read(self, date: _WrittenDate, this_year: int) -> datetime | str:
        """The local time `date` (of this pattern's shape) holds, or why it holds none: its names are read in the
        file's languages, and a date they read as two different times is none."""
        found = _year_of(date.fields[self.year], this_year)
        if found is None:
            return "has a year no Discord message has"
        year, buddhist = found
        if buddhist != self.buddhist:
            return "has a Buddhist-era year among the file's Gregorian ones"
        if date.afternoon is not None and not 1 <= date.hour <= 12:
            return "has an hour of no 12-hour clock beside its AM/PM designator"
        written = date.fields[self.month]
        if not written[0].isalpha() and date.weekday is None:
            return self._moment(date, year, int(written) - 1)
        meanings = _meanings(self.languages, written, date.weekday)
        if isinstance(meanings, str):
            return meanings
        read: dict[datetime, list[str]] = {}
        why = ""
        for (month, weekday), languages in meanings.items():
            moment = self._moment(date, year, month)
            if isinstance(moment, str):
                why = why or moment
            elif weekday is not None and weekday != moment.weekday():
                why = why or f"is a {moment:%A} in the file's pattern ({self.describe()}), not a {date.weekday}"
            else:
                read.setdefault(moment, []).extend(languages)
        if len(read) > 1:
            told = ", ".join(f"{moment:%Y-%m-%d} in {' and '.join(languages)}" for moment, languages in read.items())
            return f"reads as {told}, and the file's other dates do not tell which language it is in"
        return next(iter(read), why)

    def _moment(self, date: _WrittenDate, year: int, month: int) -> datetime | str:
        """The time `date` holds with this year and month (from 0), or why there is none."""
        hour = date.hour if date.afternoon is None else date.hour % 12 + (12 if date.afternoon else 0)
        try:
            return datetime(year, month + 1, int(date.fields[self.day]), hour, date.minute, date.second)
        except ValueError:
            return f"is no date in the file's pattern ({self.describe()})"

    def describe(self) -> str:
        """The pattern as .NET's format strings write one ("d/M/yyyy H:mm", "MMM d, yyyy h:mm tt"), without the
        numbers' padding or the names' length ("MMM" for "Mar" and "March"), which its dates do not always tell."""
        shape = self.shape
        fields = {self.year: "yyyy" if shape.kinds[self.year] == "4" else "yy",
                  self.month: "MMM" if shape.kinds[self.month] == "a" else "M", self.day: "d"}
        # a separator's Latin letters are quoted, as .NET would read them as fields ("d 'de' MMM 'de' yyyy")
        date = "".join(fields[i] + re.sub(r"[A-Za-z]+", r"'\g<0>'", shape.separators[i]) for i in range(3))
        date = ("" if shape.weekday is None else f"ddd{shape.weekday}") + date + (
            "" if shape.late_weekday is None else f"{shape.late_weekday}ddd")
        hour = "H" if shape.designator is None else "h"
        clock = " h " if shape.clock == "h" else shape.clock
        time = f"{hour}{clock}mm" + (f"{':' if shape.clock == 'h' else shape.clock}ss" if shape.seconds else "")
        time = {"before": f"tt {time}", "after": f"{time} tt"}.get(shape.designator or "", time)
        return f"{time} {date}" if shape.time_first else f"{date} {time}"

    def log(self, path: Path | None) -> None:
        """Say in the log what the file's dates could not tell, and a Buddhist era read."""
        for assumed in self.assumed:
            log.warning("%s: %s (%s)", path, assumed, self.describe())
        if self.buddhist:
            log.info("%s: its years are of the Thai Buddhist era (th-TH's calendar): read %d years earlier (%s)",
                     path, _BUDDHIST_ERA, self.describe())


def _languages_of(dates: list[_WrittenDate], month: int | None) -> tuple[str, ...]:
    """The languages that have the names (the month's in field `month`, and the weekday) of the most of `dates`,
    in `_LANGUAGES`' order; none when no date's names are a language's."""
    counts: Counter[str] = Counter()
    for (name, weekday), named in Counter((None if month is None else d.fields[month], d.weekday)
                                          for d in dates).items():
        known = _MONTHS.get(_name_key(name), {}).keys() if name is not None else None
        if weekday is not None:
            weekdays = _WEEKDAYS.get(_name_key(weekday), {}).keys()
            known = weekdays if known is None else known & weekdays
        for language in known or ():
            counts[language] += named
    most = max(counts.values(), default=0)
    return tuple(language for language in _LANGUAGES if most and counts[language] == most)


_Meanings = dict[tuple[int, int | None], list[str]]  # (a month from 0, a weekday from 0 or None) → languages


@lru_cache(maxsize=4096)
def _meanings(languages: tuple[str, ...], month: str, weekday: str | None) -> _Meanings | str:
    """What a date's month (a name, or a number) and weekday (None without one) mean in each of `languages`: (the
    month from 0, the weekday from 0 or None) → the languages reading them so; or why they mean nothing there."""
    months = _MONTHS.get(_name_key(month), {}) if month[0].isalpha() else None
    weekdays = _WEEKDAYS.get(_name_key(weekday), {}) if weekday is not None else None
    meanings: _Meanings = {}
    for language in languages:
        place = int(month) - 1 if months is None else months.get(language)
        day = None if weekdays is None else weekdays.get(language)
        if place is not None and (weekdays is None or day is not None):
            meanings.setdefault((place, day), []).append(language)
    if meanings:
        return meanings
    what = "month" if months is not None and (not languages or languages[0] not in months) else "weekday"
    return f"has no {languages[0]} {what} name" if languages else f"has no {what} name of a language read here"


def _is_iso(text: str) -> bool:
    """An ISO 8601 time with `T` or an offset (CSV's "o" format), not a locale's "2024-03-14 18:02"."""
    m = _TIMESTAMP.fullmatch(text)
    return m is not None and ("T" in text or m.group(8) is not None)
