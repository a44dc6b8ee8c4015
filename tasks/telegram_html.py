"""Reading Telegram Desktop's HTML export (its default format) into the same chats as its JSON export gives.

One chat's export is a folder of pages, `messages.html`, `messages2.html`, … (1000 messages each), read in order as
one chat; an account's export holds one such folder per chat (`chats/chat_001/`), each its own chat. Pages are
told by their content, as Desktop starts every page (`<title>Exported Data</title>`, `css/style.css`) and a chat's
pages by their `page_body chat_page`. The markup relied on is Desktop's writer (tdesktop's
`Telegram/SourceFiles/export/output/export_output_html.cpp`, read at commit 929032d, 2025-09): `pushMessage`,
`pushServiceMessage`, `pushMedia`/`prepareMediaData`, `pushPoll`, `wrapMessageLink`, `writeDialogSlice`.

Read, per `<div class="message …" id="messageN">`: the id; the author (`from_name`, " via @bot" left out; a
"joined" message has none and continues the author of the message before it); the time, the `title` of its
`date` element ("14.03.2024 18:02:05", newer versions add " UTC+01:00"), read as written: the local time of the
exporting computer, as the JSON export's `date` is, so both exports give the same timestamps. The offset is not
applied: Desktop writes the zone's *standard* offset (`QTimeZone::StandardTime` in `FormatDateTime`), one for
every message, wrong by the summer hour for half the year; it is kept in `stats["utc_offset"]`. The text (links,
bold… as their text, `<br>` as a newline, entities decoded); a reply (`go_to_message<N>` in the reply's link, in
this page or an earlier one) to message N; a forward (its `forwarded body`), counted as the JSON reader does;
media worded as the JSON reader words them (photo, video, GIF, voice and video messages, sticker, audio, file,
contact, location, venue…); polls as WhatsApp writes them; calls and service messages (joins, pins, title
changes…) as system lines, the ones the JSON reader words worded the same. A service message has no time of its
own: it takes the time of the message before it, or after it when it opens a day or the chat.

Not read: whether a message was edited (pushMessage writes no mark of it, the `date`'s title is when it was sent:
a message the JSON reader makes "edited" by its `edited` is "text" here); which chat a reply to another chat points
to (such a reply is kept as no reply); what Desktop writes beside a message's text that the JSON reader leaves out
too: its reactions (since 5.5.7, 2024-10: a `reactions` block last in the message's body, of `<div>`s, of `<span>`s
since 5.13, each `reaction` an emoji, a custom emoji's link or ⭐ for paid stars, with the userpics of the latest
to react and, when there are more, the count; no field of a message holds them and they are no messages, so
nothing is counted), bot buttons (`bot_buttons_table`), a post's signature (`signature details`, the JSON's
`author`) and the " via @bot" after the sender's name (`via_bot`); the chat's Telegram id and type, and the files
of media (only their kind). Date separators ("1 April 2024", negative ids) and the "not supported by this version"
placeholder (counted, as the JSON reader counts `unsupported`) are not messages. Pages are parsed with
resiliparse (lexbor, a WHATWG parser in C: the pages are parsed as the browser they are written for parses them;
a dependency already, and faster than lxml, whose libxml2 parser also caps text nodes at 10 MB unless told).

A damaged page: a page that ends early (Desktop stopped, a cut copy) keeps its complete messages (a message is
complete when its `<div>` is closed) and the cut is counted once (`telegram_truncated_export`, the page named);
a message without a readable time is skipped and counted (`telegram_bad_date`, its page and id). A file that is
no page of an export, or whose pages end before their first complete message, is a one-line InputFileError.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from resiliparse.parse.html import DOMNode, HTMLTree, NodeType

from tasks.chat_records import (
    AUDIO,
    CONTACT,
    DOCUMENT,
    GIF,
    IMAGE,
    MEDIA,
    STICKER,
    VIDEO,
    VIDEO_NOTE,
    VOICE,
    ChatSkips,
    SourceMessage,
    build_chat,
    chat_id_for,
    combined_sha256,
    file_sha256,
    html_children,
    html_elements,
    numbered_parts,
    read_export_bytes,
)
from tasks.records import InputFileError, SkipCounter, without_surrogates
from tasks.whatsapp.parser import WhatsAppChat

SOURCE = "telegram"
_HEAD_BYTES = 4096
_PAGE = re.compile(r"messages(\d*)\.html", re.IGNORECASE)
_MESSAGE_START = re.compile(r'<div class="message[ "]')
_DIV = re.compile(r"<div[\s>]|</div>")
_DATE = re.compile(r"\s*(\d{2})\.(\d{2})\.(\d{4}) (\d{2}):(\d{2}):(\d{2})(?: UTC([+-]\d{2}:\d{2})?)?\s*")
_REPLY = re.compile(r"go_to_message(\d+)|GoToMessage\((\d+)\)")
_VIA_BOT = re.compile(r" via @\w+$")
_VOTES = re.compile(r"(\d+) votes?")
_CALL_SECONDS = re.compile(r"\((\d+) seconds\)")
_UNSUPPORTED = "This message is not supported by this version of Telegram Desktop."
# media by the class of the element inside `media_wrap` (a thumbnail's wrapper, or pushGenericMedia's `media_*`)
_MEDIA_CLASSES = {"photo_wrap": IMAGE, "sticker_wrap": STICKER, "animated_wrap": GIF, "video_file_wrap": VIDEO,
                  "media_voice_message": VOICE, "media_audio_file": AUDIO, "media_file": DOCUMENT,
                  "media_contact": CONTACT}
_GENERIC_TITLES = {"Sticker": STICKER, "Animation": GIF, "Video message": VIDEO_NOTE}
# service sentences of Desktop's HTML (pushMessage's serviceText) → the JSON reader's wording of the same action
_SERVICE = [(re.compile(pattern), wording) for pattern, wording in (
    (r"(?P<a>.+?) created group «(?P<t>.*)»(?: with members .*)?", '{a} created group "{t}"'),
    (r"(?P<a>.+?) changed group title to «(?P<t>.*)»", '{a} changed the group name to "{t}"'),
    (r"(?P<a>.+?) joined group by link from .*", "{a} joined using an invite link"),
    (r"(?P<a>.+?) pinned this message", "{a} pinned a message"),
    (r"(?P<a>.+?) changed group photo", "{a} changed the group photo"),
    (r"(?P<a>.+?) converted this group to a supergroup", "{a} converted the group to a supergroup"),
    (r"(?P<a>.+?) invited (?P<m>.+)", "{a} added {m}"),
)]
log = logging.getLogger(__name__)


def read_telegram_html_export(path: str | os.PathLike, skips: SkipCounter | None = None) -> list[WhatsAppChat]:
    """The chat of a Telegram Desktop HTML export: `path` is its folder or its `messages.html`, whose later pages
    (`messages2.html`, …) are read with it; a later page given alone, beside its first, gives nothing (it is read
    with the first). Raises InputFileError, naming the file, for a file that is no exporter's page of a chat, and
    for pages that end before their first complete message."""
    path = Path(path)
    skips = skips if skips is not None else SkipCounter()
    if path.is_dir():  # its first page, messages.html (or, that one missing, the first left)
        path = chat_pages(path / "messages.html")[0]
    pages = chat_pages(path)
    if pages[0] != path:
        return []
    chat_skips = ChatSkips(skips, str(path.parent))
    reader = _ChatReader(chat_skips)
    name, cuts = None, []
    for page in pages:
        html, cut = _page_text(page)
        head = html[:_HEAD_BYTES * 2]
        if not _is_exporter_page(head) or ("chat_page" not in head and not cut):
            raise InputFileError(f"{page}: an HTML page without a chat's message history, not a Telegram Desktop "
                                 "HTML export (its messages.html)")
        end = len(html) if not cut else _complete_end(html)
        tree = HTMLTree.parse(html[:end])
        name = name or _chat_name(tree)
        reader.read_page(tree, page.name)
        if cut:
            cuts.append(page)
    if cuts and not reader.records:
        raise InputFileError(f"{cuts[0]}: it ends early (an unfinished export?) before its first complete message, "
                             "not a complete Telegram Desktop HTML export")
    extra: dict = {"chat_type": None, "source_chat_id": path.parent.name, "pages": len(pages)}
    if reader.offset is not None:
        extra["utc_offset"] = reader.offset
    for page in cuts:
        log.warning("%s ends early (an unfinished export?): its complete messages kept, the rest lost", page)
        chat_skips.skip("telegram_truncated_export", page.name,
                        "the page ends early (an unfinished export?), the messages after its last complete one lost")
        extra.update(truncated=True)
    digest = combined_sha256([file_sha256(p) for p in pages])
    return [build_chat(reader.finished(), chat_id=chat_id_for(digest, path.parent.name), path=path, source=SOURCE,
                       name=name, skipped=dict(chat_skips.counts), extra=extra)]


def chat_pages(path: str | os.PathLike) -> list[Path]:
    """The pages of the chat `path` belongs to: every `messagesN.html` of its folder in order (messages.html first);
    a page of another name alone."""
    return numbered_parts(Path(path), _page_number)


def export_sha256(path: str | os.PathLike) -> str:
    """The content hash of the chat a page belongs to (all its pages): what ingest keys the chat's work on."""
    return combined_sha256([file_sha256(p) for p in chat_pages(path)])


def looks_like_telegram_html(path: str | os.PathLike) -> bool:
    """Cheap sniff for input-kind detection: a file that starts as every page of Desktop's HTML export starts."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError:
        return False
    return _is_exporter_page(head.decode("utf-8", errors="ignore"))


def is_read_with_another_file(path: str | os.PathLike) -> bool:
    """A file of an HTML export read with another one, or not at all: a chat's later pages (with its messages.html),
    the export's other pages (export_results.html, lists/), and its css, js, images and media files."""
    path = Path(path)
    if path.suffix.lower() in (".html", ".htm") and looks_like_telegram_html(path):
        return chat_pages(path)[0] != path or not _is_chat_page(path)
    return in_telegram_html_export(path)


def in_telegram_html_export(path: str | os.PathLike) -> bool:
    """A file below the folder of an HTML export (its css/, js/, images/, photos/, stickers/…), up to three
    folders down: a folder above it holds the export's messages.html or export_results.html."""
    for folder in list(Path(path).parents)[:3]:
        for page in ("messages.html", "export_results.html"):
            if (folder / page).is_file() and looks_like_telegram_html(folder / page):
                return True
    return False


def _page_number(path: Path) -> int | None:
    match = _PAGE.fullmatch(path.name)
    return (int(match.group(1)) if match.group(1) else 1) if match else None


def _is_exporter_page(head: str) -> bool:
    return "<title>Exported Data</title>" in head and "css/style.css" in head


def _is_chat_page(path: Path) -> bool:
    with open(path, "rb") as f:
        return b"chat_page" in f.read(_HEAD_BYTES * 2)


def _page_text(path: Path) -> tuple[str, bool]:
    """A page's text, and whether it ends early (before Desktop's closing `</html>`); a page cut inside a UTF-8
    character is read without it."""
    data = read_export_bytes(path)
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        html = str(memoryview(data)[bom:], "utf-8")
    except UnicodeDecodeError as e:
        if e.reason != "unexpected end of data":
            raise InputFileError(f"{path}: not UTF-8 text (byte {bom + e.start}), not a Telegram Desktop HTML "
                                 "export") from None
        html = str(memoryview(data)[bom:bom + e.start], "utf-8")
    return html, not html.rstrip().endswith("</html>")


def _complete_end(html: str) -> int:
    """Where the complete messages of a page that ends early end: after the last message whose `<div>` is closed
    (the text never holds a `<`: Desktop escapes it), else at the start of the one cut."""
    starts = [m.start() for m in _MESSAGE_START.finditer(html)]
    if not starts:
        return 0
    depth = 0
    for tag in _DIV.finditer(html, starts[-1]):
        depth += -1 if tag.group().startswith("</") else 1
        if depth == 0:
            return tag.end()
    return starts[-1]


def _chat_name(tree: HTMLTree) -> str | None:
    header = tree.body.query_selector(".page_header .text") if tree.body is not None else None
    return without_surrogates(_text(header).strip()) or None if header is not None else None


@dataclass
class _Parts:
    """What a default message's body holds, its `forwarded body` included."""

    title: str | None = None
    author: str | None = None
    forwarded: bool = False
    reply_to: str | None = None
    media: DOMNode | None = None
    text: str = ""


class _ChatReader:
    """The source messages of a chat's pages, read one page after another."""

    def __init__(self, skips: ChatSkips) -> None:
        self.skips = skips
        self.records: list[SourceMessage] = []
        self.offset: str | None = None
        self._author: str | None = None  # of the message before: a joined message's
        self._undated: list[SourceMessage] = []  # service messages waiting for the next message's time
        self._new_day = True

    def read_page(self, tree: HTMLTree, page: str) -> None:
        self._author = None  # Desktop starts every page with a full message
        history = tree.body.query_selector("div.history") if tree.body is not None else None
        messages = [n for n in html_elements(history) if "message" in n.class_list] if history is not None else []
        for number, node in enumerate(messages):
            raw_id = (node.getattr("id") or "").removeprefix("message")
            locator = f"{page}:message{raw_id or '?'}"
            source_id = raw_id if raw_id.lstrip("-").isdigit() else f"{page}:position-{number}"
            if "service" in node.class_list:
                self._read_service(node, source_id, locator)
            else:
                self._read_default(node, source_id, locator)

    def finished(self) -> list[SourceMessage]:
        last = next((r.timestamp for r in reversed(self.records) if r.timestamp is not None), None)
        for record in self._undated:  # services after the last dated message
            record.timestamp = last
        return self.records

    def _read_service(self, node: DOMNode, source_id: str, locator: str) -> None:
        body = node.query_selector(".body")
        text = " ".join(_text(body).split()) if body is not None else ""
        if source_id.startswith("-"):  # a date separator (or "No exported messages"): not a message
            self._new_day = True
            return
        if text.startswith(_UNSUPPORTED):
            self.skips.skip("telegram_unsupported_message", locator, "exported without content")
            return
        self._author = None
        self._add_undated(SourceMessage(source_id, None, None, without_surrogates(_service_text(text)), "system"))

    def _read_default(self, node: DOMNode, source_id: str, locator: str) -> None:
        body = next((c for c in html_elements(node) if "body" in c.class_list), None)
        parts = _Parts()
        if body is not None:
            _read_body(body, parts)
        author = parts.author if parts.author is not None else self._author
        self._author = author
        timestamp = self._timestamp(parts.title)
        if timestamp is None:
            self.skips.skip("telegram_bad_date", locator, repr(parts.title)[:60])
            return
        if author is None:
            author = "Deleted Account"
        author = without_surrogates(author)
        text = without_surrogates(parts.text.strip())
        kind, body_text = "text", text
        if parts.media is not None:
            kind, body_text, system = _media(parts.media, author, text)
            if system:
                author = None
        if not body_text:
            self.skips.skip("telegram_empty_message", locator, "no text, media or poll")
            return
        record = SourceMessage(source_id, timestamp, author, body_text, kind, parts.reply_to, parts.forwarded)
        self.records.append(record)
        for waiting in self._undated:
            waiting.timestamp = timestamp
        self._undated.clear()
        self._new_day = False

    def _add_undated(self, record: SourceMessage) -> None:
        previous = next((r.timestamp for r in reversed(self.records) if r.timestamp is not None), None)
        self.records.append(record)
        if previous is not None and not self._new_day:
            record.timestamp = previous
        else:
            self._undated.append(record)

    def _timestamp(self, title: str | None) -> datetime | None:
        match = _DATE.fullmatch(title or "")
        if match is None:
            return None
        day, month, year, hour, minute, second, offset = match.groups()
        if offset is not None or "UTC" in (title or ""):
            self.offset = offset or "+00:00"
        try:
            return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
        except ValueError:
            return None


def _read_body(body: DOMNode, parts: _Parts) -> None:
    for child in html_elements(body):
        classes = child.class_list
        if "date" in classes and parts.title is None:
            parts.title = child.getattr("title")
        elif "from_name" in classes and parts.author is None and not parts.forwarded:
            parts.author = _VIA_BOT.sub("", " ".join(_text(child).split()))
        elif "forwarded" in classes and "body" in classes:
            parts.forwarded = True
            _read_body(child, parts)
        elif "reply_to" in classes:
            link = child.query_selector("a")
            found = _REPLY.search(f"{link.getattr('href') or ''} {link.getattr('onclick') or ''}") if link else None
            parts.reply_to = (found.group(1) or found.group(2)) if found else None
        elif "media_wrap" in classes:
            parts.media = child
        elif "text" in classes:
            parts.text = _text(child)


def _media(wrap: DOMNode, author: str, caption: str) -> tuple[str, str, bool]:
    """A message's media as (kind, text, whether it is a system line): the JSON reader's placeholder with the
    caption on the next line, a poll written as WhatsApp writes one, a call as the JSON reader's service line."""
    inner = next(html_elements(wrap), None)
    classes = inner.class_list if inner is not None else []
    if "media_poll" in classes:
        return "poll", _poll_text(inner), False
    title_node = inner.query_selector(".title") if inner is not None else None
    title = " ".join(_text(title_node).split()) if title_node is not None else ""
    if "media_call" in classes:
        status_node = inner.query_selector(".status")
        status = _text(status_node) if status_node is not None else ""
        seconds = _CALL_SECONDS.search(status)
        if status.strip().startswith(("Missed", "Cancelled")):
            return "system", f"Missed call from {author}", True
        return "system", f"{author} called ({seconds.group(1)} s)" if seconds else f"{author} called", True
    placeholder = next((p for c, p in _MEDIA_CLASSES.items() if c in classes), None)
    if placeholder is None:
        if "media_photo" in classes:
            placeholder = _GENERIC_TITLES.get(title, IMAGE)
        elif "media_video" in classes:
            placeholder = _GENERIC_TITLES.get(title, VIDEO)
        else:
            placeholder = MEDIA  # a location, venue, game, invoice, giveaway…
    return "media", f"{placeholder}\n{caption}" if caption else placeholder, False


def _poll_text(poll: DOMNode) -> str:
    question = poll.query_selector(".question")
    lines = ["POLL:", _text(question).strip() if question is not None else ""]
    for answer in (c for c in html_elements(poll) if "answer" in c.class_list):
        details = answer.query_selector(".details")
        votes_match = _VOTES.search(_text(details)) if details is not None else None
        votes = int(votes_match.group(1)) if votes_match else 0
        text = "".join(_text(c) for c in html_children(answer) if c != details).strip().removeprefix("- ")
        lines.append(f"OPTION: {text} ({votes} vote{'' if votes == 1 else 's'})")
    return without_surrogates("\n".join(lines))


def _service_text(text: str) -> str:
    for pattern, wording in _SERVICE:
        match = pattern.fullmatch(text)
        if match:
            return wording.format(**match.groupdict())
    return text


def _text(node: DOMNode) -> str:
    """A node's text as shown: text nodes as they are, `<br>` as a newline; gathered in one list, joined once."""
    out: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == NodeType.TEXT:
            out.append(current.text)
        elif current.type == NodeType.ELEMENT:
            if current.tag == "br":
                out.append("\n")
            else:
                stack.extend(reversed(list(html_children(current))))
    return "".join(out)
