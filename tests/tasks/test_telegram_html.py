"""Telegram Desktop's HTML export (its default format) → chats: the same chat as its JSON export gives, the pages of
one chat read as one, an account's chats, what a damaged page keeps, and how ingest finds an export's folder.

The pages below are written by hand after the exporter's markup (tdesktop's export_output_html.cpp: `pushMessage`,
`pushServiceMessage`, `pushMedia`, `wrapMessageLink`, `writeDialogSlice`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.ingest import detect_kind, ingest_file
from tasks.params import IngestParams, InputSpec
from tasks.records import InputFileError, SkipCounter
from tasks.telegram import read_telegram_export
from tasks.telegram_html import looks_like_telegram_html, read_telegram_html_export


def page(body: str, name: str = "Hike crew", base: str = "") -> str:
    """A messages page as Desktop starts and ends one (composeStart, pushHeader, writeDialogOpening, close)."""
    return f"""<!DOCTYPE html>
<html>

 <head>

  <meta charset="utf-8"/>
<title>Exported Data</title>
  <meta content="width=device-width, initial-scale=1.0" name="viewport"/>

  <link href="{base}css/style.css" rel="stylesheet"/>

  <script src="{base}js/script.js" type="text/javascript">

  </script>

 </head>

 <body onload="CheckLocation();">

  <div class="page_wrap">

   <div class="page_header">

    <div class="content">

     <div class="text bold">
{name}
     </div>

    </div>

   </div>

   <div class="page_body chat_page">

    <div class="history">
{body}
    </div>

   </div>

  </div>

 </body>

</html>
"""


def date_separator(number: int, day: str) -> str:
    return f"""
     <div class="message service" id="message-{number}">

      <div class="body details">
{day}
      </div>

     </div>
"""


def service(message_id: int, text: str) -> str:
    return f"""
     <div class="message service" id="message{message_id}">

      <div class="body details">
{text}
      </div>

     </div>
"""


def message(message_id: int, title: str, inner: str, author: str | None = None) -> str:
    """A default message, its `from_name` as ComposeName writes it (first name, a space, an empty last name);
    without `author` a "joined" one (the same sender within minutes: no name, no userpic)."""
    if author is None:
        return f"""
     <div class="message default clearfix joined" id="message{message_id}">

      <div class="body">

       <div class="pull_right date details" title="{title}">
{title[11:16]}
       </div>
{inner}
      </div>

     </div>
"""
    return f"""
     <div class="message default clearfix" id="message{message_id}">

      <div class="pull_left userpic_wrap">

       <div class="userpic userpic2" style="width: 42px; height: 42px">

        <div class="initials" style="line-height: 42px">
{author[0]}
        </div>

       </div>

      </div>

      <div class="body">

       <div class="pull_right date details" title="{title}">
{title[11:16]}
       </div>

       <div class="from_name">
{author + " "}
       </div>
{inner}
      </div>

     </div>
"""


def text(html: str) -> str:
    return f"""
       <div class="text">
{html}
       </div>
"""


def reply(message_id: int, page_name: str = "") -> str:
    link = (f'<a href="{page_name}#go_to_message{message_id}">this message</a>' if page_name else
            f'<a href="#go_to_message{message_id}" onclick="return GoToMessage({message_id})">this message</a>')
    return f"""
       <div class="reply_to details">
In reply to {link}
       </div>
"""


def media(classes: str, title: str, status: str = "") -> str:
    """`pushGenericMedia`: a file not downloaded, a voice message, a call, a location."""
    status_div = f'\n         <div class="status details">\n{status}\n         </div>\n' if status else ""
    return f"""
       <div class="media_wrap clearfix">

        <div class="media clearfix pull_left {classes}">

         <div class="fill pull_left">
         </div>

         <div class="body">

          <div class="title bold">
{title}
          </div>
{status_div}
         </div>

        </div>

       </div>
"""


PHOTO = """
       <div class="media_wrap clearfix">

        <a class="photo_wrap clearfix pull_left" href="photos/photo_1@01-04-2024_09-02-00.jpg">

         <img class="photo" src="photos/photo_1@01-04-2024_09-02-00_thumb.jpg" style="width: 260px; height: 195px"/>

        </a>

       </div>
"""
STICKER = """
       <div class="media_wrap clearfix">

        <a class="sticker_wrap clearfix pull_left" href="stickers/sticker.webp">

         <img class="sticker" src="stickers/sticker.webp_thumb.jpg" style="width: 128px; height: 128px"/>

        </a>

       </div>
"""
FORWARDED = """
       <div class="pull_left forwarded userpic_wrap">

        <div class="userpic userpic5" style="width: 42px; height: 42px">

         <div class="initials" style="line-height: 42px">
H
         </div>

        </div>

       </div>

       <div class="forwarded body">

        <div class="from_name">
Hiking Club <span class="date details" title="31.03.2024 20:00:00 UTC+02:00"> 31.03.2024 20:00:00</span>
        </div>

        <div class="text">
Trail closed north of the lake<br>until April.
        </div>

       </div>
"""
POLL = """
       <div class="media_wrap clearfix">

        <div class="media_poll">

         <div class="question bold">
Which Saturday?
         </div>

         <div class="details">
Anonymous poll
         </div>

         <div class="answer">
- the 6th <span class="details">2 votes</span>
         </div>

         <div class="answer">
- the 13th <span class="details">1 vote, chosen vote</span>
         </div>

         <div class="answer">
- the 20th
         </div>

         <div class="total details	">
3 votes
         </div>

        </div>

       </div>
"""
NEXT = '\n     <a class="pagination block_link" href="messages2.html">\nNext messages\n     </a>\n'
PREVIOUS = '\n     <a class="pagination block_link" href="messages.html">\nPrevious messages\n     </a>\n'

PAGE_1 = page("".join([
    date_separator(1, "1 April 2024"),
    service(10, "Priya created group &laquo;Hike crew&raquo; with members Sam Lee and Kim"),
    message(11, "01.04.2024 09:01:00 UTC+02:00",
            text("Morning! Who&apos;s in?<br>Bring <strong>boots</strong> &amp; water"), "Priya"),
    message(12, "01.04.2024 09:01:30 UTC+02:00", text("and snacks")),
    message(13, "01.04.2024 09:02:00 UTC+02:00",
            reply(11) + text('Yes! See <a href="https://example.org/map">the trail map</a>'), "Sam Lee"),
    message(14, "01.04.2024 09:02:40 UTC+02:00", PHOTO + text("the view last time")),
    message(15, "01.04.2024 09:03:00 UTC+02:00", FORWARDED, "Kim"),
    message(16, "01.04.2024 09:04:00 UTC+02:00", STICKER, "Priya"),
    service(17, 'Kim pinned <a href="#go_to_message11" onclick="return GoToMessage(11)">this message</a>'),
    NEXT,
]))
PAGE_2 = page("".join([
    PREVIOUS,
    date_separator(2, "2 April 2024"),
    message(18, "02.04.2024 08:00:00 UTC+02:00", reply(13, "messages.html") + text("see you there"), "Kim"),
    message(19, "02.04.2024 08:01:00 UTC+02:00", POLL, "Sam Lee"),
    message(20, "02.04.2024 20:00:00 UTC+02:00", media("media_call success", "Kim", "Outgoing (65 seconds)"),
            "Sam Lee"),
    message(21, "02.04.2024 20:05:00 UTC+02:00", media("media_voice_message", "Voice message", "00:04"), "Priya"),
]))


def _json_message(message_id: int, date: str, author: str, **fields) -> dict:
    return {"id": message_id, "type": "message", "date": date, "from": author, "text": "", **fields}


JSON_EXPORT = {
    "name": "Hike crew", "type": "private_group", "id": 777,
    "messages": [
        # a service message has no time in HTML: it takes its neighbour's (the message after a day's first)
        {"id": 10, "type": "service", "date": "2024-04-01T09:01:00", "actor": "Priya", "action": "create_group",
         "title": "Hike crew", "members": ["Sam Lee", "Kim"], "text": ""},
        _json_message(11, "2024-04-01T09:01:00", "Priya",
                      text=["Morning! Who's in?\nBring ", {"type": "bold", "text": "boots"}, " & water"]),
        _json_message(12, "2024-04-01T09:01:30", "Priya", text="and snacks"),
        _json_message(13, "2024-04-01T09:02:00", "Sam Lee", reply_to_message_id=11,
                      text=["Yes! See ", {"type": "link", "text": "the trail map"}]),
        _json_message(14, "2024-04-01T09:02:40", "Sam Lee", photo="photos/photo_1.jpg", text="the view last time"),
        _json_message(15, "2024-04-01T09:03:00", "Kim", forwarded_from="Hiking Club",
                      text="Trail closed north of the lake\nuntil April."),
        _json_message(16, "2024-04-01T09:04:00", "Priya", file="stickers/sticker.webp", media_type="sticker"),
        {"id": 17, "type": "service", "date": "2024-04-01T09:04:00", "actor": "Kim", "action": "pin_message",
         "message_id": 11, "text": ""},
        _json_message(18, "2024-04-02T08:00:00", "Kim", reply_to_message_id=13, text="see you there"),
        _json_message(19, "2024-04-02T08:01:00", "Sam Lee", poll={
            "question": "Which Saturday?", "answers": [{"text": "the 6th", "voters": 2},
                                                       {"text": "the 13th", "voters": 1},
                                                       {"text": "the 20th", "voters": 0}]}),
        {"id": 20, "type": "service", "date": "2024-04-02T20:00:00", "actor": "Sam Lee", "action": "phone_call",
         "duration_seconds": 65, "text": ""},
        _json_message(21, "2024-04-02T20:05:00", "Priya", file="voice_messages/audio_1.ogg",
                      media_type="voice_message"),
    ],
}


def write_export(folder: Path, *pages: str) -> Path:
    """A one-chat HTML export as Desktop leaves it: its pages, css/, js/, images/ and a photo."""
    folder.mkdir(parents=True, exist_ok=True)
    for number, html in enumerate(pages, 1):
        (folder / f"messages{number if number > 1 else ''}.html").write_text(html, encoding="utf-8")
    for asset, content in (("css/style.css", "body {}"), ("js/script.js", "function GoToMessage(id) {}"),
                           ("images/back.png", "\x89PNG"), ("photos/photo_1@01-04-2024_09-02-00.jpg", "\xff\xd8"),
                           ("stickers/sticker.webp", "RIFF"), ("stickers/sticker.tgs", "\x1f\x8b")):
        (folder / asset).parent.mkdir(parents=True, exist_ok=True)
        (folder / asset).write_text(content, encoding="latin-1")
    return folder / "messages.html"


def _rows(chat) -> list[tuple]:
    return [(m.timestamp, m.author, m.text, m.kind, m.reply_to) for m in chat.messages]


# --- the same chat as JSON --------------------------------------------------------------------------------------


def test_the_html_export_of_a_chat_gives_what_its_json_export_gives(tmp_path):
    first = write_export(tmp_path / "ChatExport_2024-04-03", PAGE_1, PAGE_2)
    (tmp_path / "result.json").write_text(json.dumps(JSON_EXPORT), encoding="utf-8")
    [from_json] = read_telegram_export(tmp_path / "result.json")
    skips = SkipCounter()
    [chat] = read_telegram_html_export(first, skips)
    assert _rows(chat) == _rows(from_json)
    assert len(chat.messages) == 12 and skips.total == 0
    assert chat.stats["authors"] == {"Priya": 4, "Sam Lee": 3, "Kim": 2}  # the joined 12 and 14 have theirs
    assert chat.stats["forwarded_indexes"] == from_json.stats["forwarded_indexes"] == [5]
    assert chat.stats["chat_name"] == "Hike crew" and chat.stats["pages"] == 2
    assert chat.stats["utc_offset"] == "+02:00"
    assert [m.text for m in chat.messages[:3]] == [
        'Priya created group "Hike crew"', "Morning! Who's in?\nBring boots & water", "and snacks"]
    assert chat.messages[8].reply_to == "3"  # on page 2, the reply to page 1's message 13
    # the folder reads the same, page by page
    [again] = read_telegram_html_export(first.parent)
    assert _rows(again) == _rows(chat) and again.chat_id == chat.chat_id


def test_a_later_page_alone_is_read_with_the_first(tmp_path):
    from tasks.telegram_html import is_read_with_another_file

    first = write_export(tmp_path / "export", PAGE_1, PAGE_2)
    assert read_telegram_html_export(first.parent / "messages2.html") == []
    assert is_read_with_another_file(first.parent / "messages2.html")
    assert not is_read_with_another_file(first)
    (first).unlink()  # without its first page, the second is the chat
    [chat] = read_telegram_html_export(first.parent / "messages2.html")
    assert [m.author for m in chat.messages] == ["Kim", "Sam Lee", None, "Priya"]
    assert chat.messages[0].reply_to == "#13"  # page 1 is gone: unresolved


def test_times_without_an_offset_are_read_as_written(tmp_path):
    old = PAGE_1.replace(" UTC+02:00", "")
    [chat] = read_telegram_html_export(write_export(tmp_path / "old", old))
    assert chat.messages[1].timestamp.isoformat() == "2024-04-01T09:01:00"
    assert "utc_offset" not in chat.stats


# --- what the HTML shows beside a message and no reader reads ------------------------------------------------------

# pushMessage's reactions, after everything else of a message's body: a `reaction` per emoji (its Unicode, a custom
# emoji as FormatCustomEmoji's link around 👋, ⭐ for paid stars), the userpics of the recent reacters (their name
# in the initials' title) and, when there are more than those, the count; spans since 5.13 (2025-03), divs before
REACTIONS = """
       <span class="reactions">

        <span class="reaction active">

         <span class="emoji">
👍
         </span>

         <span class="userpics">

          <div class="userpic userpic3" style="width: 20px; height: 20px">

           <div class="initials" style="line-height: 20px" title="Kim Lee">
KL
           </div>

          </div>

          <div class="userpic userpic5" style="width: 20px; height: 20px">

           <div class="initials" style="line-height: 20px" title="Sam">
S
           </div>

          </div>

         </span>

        </span>

        <span class="reaction">

         <span class="emoji">
<a href = "../../stickers/AnimatedEmojies.tgs">👋</a>
         </span>

         <span class="count">
14
         </span>

        </span>

        <span class="reaction paid">

         <span class="emoji">
⭐
         </span>

         <span class="count">
50
         </span>

        </span>

       </span>
"""
REACTIONS_2024 = """
       <div class="reactions">

        <div class="reaction">

         <div class="emoji">
🔥
         </div>

         <div class="count">
3
         </div>

        </div>

       </div>
"""
BOT_BUTTONS = """
       <table class="bot_buttons_table">

        <tbody>

         <tr>

          <td class="bot_button_row">

           <div class="bot_button">

            <a href="https://example.org/route">

             <div>
Open route
             </div>

            </a>

           </div>

           <div class="bot_button_column_separator">
           </div>

           <div class="bot_button">

            <a onclick="return ShowTextCopied('Data: go | Type: callback');">

             <div>
I&apos;m going
             </div>

            </a>

           </div>

          </td>

         </tr>

        </tbody>

       </table>
"""
SIGNATURE = """
       <div class="signature details">
Priya K
       </div>
"""
FORWARDED_SIGNED = FORWARDED.replace("until April.\n        </div>\n", "until April.\n        </div>\n" + SIGNATURE)

EXTRAS_PAGE = page("".join([
    message(101, "05.04.2024 10:00:00 UTC+02:00", text("Summit at noon") + REACTIONS, "Kim"),
    message(102, "05.04.2024 10:00:20 UTC+02:00", PHOTO + REACTIONS_2024),
    message(103, "05.04.2024 10:01:00 UTC+02:00", text("Route for Saturday") + BOT_BUTTONS + SIGNATURE + REACTIONS,
            "Hike news via @hikebot"),
    message(104, "05.04.2024 10:02:00 UTC+02:00", FORWARDED_SIGNED + REACTIONS, "Sam Lee"),
]))
_REACTED = [{"type": "emoji", "count": 2, "emoji": "👍", "recent": [
                {"from": "Kim Lee", "from_id": "user1", "date": "2024-04-05T10:03:00"},
                {"from": "Sam", "from_id": "user2", "date": "2024-04-05T10:04:00"}]},
            {"type": "custom_emoji", "count": 14, "document_id": "stickers/AnimatedEmojies.tgs"},
            {"type": "paid", "count": 50}]
EXTRAS_JSON = {
    "name": "Hike crew", "type": "private_supergroup", "id": 778,
    "messages": [
        _json_message(101, "2024-04-05T10:00:00", "Kim", text="Summit at noon", reactions=_REACTED),
        _json_message(102, "2024-04-05T10:00:20", "Kim", photo="photos/photo_1.jpg",
                      reactions=[{"type": "emoji", "count": 3, "emoji": "🔥"}]),
        # a channel's post signed by its author (`author`), sent through an inline bot (`via_bot`)
        dict(_json_message(103, "2024-04-05T10:01:00", "Hike news", text="Route for Saturday",
                           via_bot="@hikebot", reactions=_REACTED, inline_bot_buttons=[[
                               {"type": "url", "text": "Open route", "data": "https://example.org/route"},
                               {"type": "callback", "text": "I'm going", "data": "go"}]]), author="Priya K"),
        dict(_json_message(104, "2024-04-05T10:02:00", "Sam Lee", forwarded_from="Hiking Club",
                           text="Trail closed north of the lake\nuntil April.", reactions=_REACTED),
             author="Priya K"),
    ],
}


def test_reactions_bot_buttons_and_signatures_are_left_out_as_the_json_reader_leaves_them_out(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps(EXTRAS_JSON), encoding="utf-8")
    [from_json] = read_telegram_export(tmp_path / "result.json")
    skips = SkipCounter()
    [chat] = read_telegram_html_export(write_export(tmp_path / "extras", EXTRAS_PAGE), skips)
    assert _rows(chat) == _rows(from_json)
    assert [(m.author, m.text) for m in chat.messages] == [
        ("Kim", "Summit at noon"), ("Kim", "image omitted"), ("Hike news", "Route for Saturday"),
        ("Sam Lee", "Trail closed north of the lake\nuntil April.")]
    assert skips.total == 0 and chat.stats["skipped"] == {}
    shown_beside = ("👍", "👋", "⭐", "🔥", "KL", "14", "50", "Open route", "going", "Priya K", "hikebot")
    assert not [(m.text, s) for m in chat.messages for s in shown_beside if s in m.text]


def test_an_edited_message_is_text_as_the_html_does_not_mark_it(tmp_path):
    edited = dict(EXTRAS_JSON, messages=[dict(EXTRAS_JSON["messages"][0], edited="2024-04-05T10:09:00")])
    (tmp_path / "result.json").write_text(json.dumps(edited), encoding="utf-8")
    [from_json] = read_telegram_export(tmp_path / "result.json")
    html = page(message(101, "05.04.2024 10:00:00 UTC+02:00", text("Summit at noon"), "Kim"))
    [chat] = read_telegram_html_export(write_export(tmp_path / "edited", html))
    assert [(m.text, m.kind) for m in from_json.messages] == [("Summit at noon", "edited")]
    assert [(m.text, m.kind) for m in chat.messages] == [("Summit at noon", "text")]


# --- an account's chats -----------------------------------------------------------------------------------------


def test_an_account_export_gives_one_chat_per_folder_and_ingest_finds_them(tmp_path):
    from tasks.ingest import resolve_inputs

    root = tmp_path / "DataExport_2024-04-03"
    write_export(root / "chats" / "chat_001", page(message(1, "01.04.2024 09:00:00", text("hi"), "Kim"),
                                                    name="Kim", base="../../"))
    write_export(root / "chats" / "chat_002", page(message(5, "02.04.2024 09:00:00", text("yo"), "Alex"),
                                                    name="Alex", base="../../"))
    (root / "lists").mkdir()
    listing = page("", name="Chats").replace("page_body chat_page", "page_body list_page")
    (root / "lists" / "chats.html").write_text(listing, encoding="utf-8")
    (root / "export_results.html").write_text(listing.replace("list_page", ""), encoding="utf-8")
    (root / "css").mkdir()
    (root / "css" / "style.css").write_text("body {}", encoding="utf-8")
    files = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(root))]))
    assert [(Path(f.path).parent.name, Path(f.path).name, f.kind) for f in files] == [
        ("chat_001", "messages.html", "telegram"), ("chat_002", "messages.html", "telegram")]
    chats = [read_telegram_html_export(f.path)[0] for f in files]
    assert [(c.stats["chat_name"], c.messages[0].text) for c in chats] == [("Kim", "hi"), ("Alex", "yo")]
    assert chats[0].chat_id != chats[1].chat_id


# --- ingest -----------------------------------------------------------------------------------------------------


def test_ingest_finds_the_export_in_its_folder_and_reads_it_whole(tmp_path):
    from storage.parquet import iter_rows
    from tasks.ingest import resolve_inputs

    first = write_export(tmp_path / "ChatExport_2024-04-03", PAGE_1, PAGE_2)
    assert detect_kind(first) == detect_kind(first.parent / "messages2.html") == "telegram"
    assert looks_like_telegram_html(first)
    spec = InputSpec(path=str(first.parent))
    [f] = resolve_inputs(IngestParams(inputs=[spec]))  # css, js, images, photos, a .tgs sticker: passed over
    assert (Path(f.path).name, f.kind, f.source) == ("messages.html", "telegram", "telegram")
    out, messages = tmp_path / "out" / "part-00000.parquet", tmp_path / "out" / "messages-00000.parquet"
    result = ingest_file(f, str(out), str(messages), IngestParams())
    assert result.info["error"] is None
    assert [r["text"] for r in iter_rows(messages)][-1] == "voice message omitted"
    assert len(list(iter_rows(messages))) == 12
    before = f.sha256  # the shard's key covers every page: a changed second page reruns it
    (first.parent / "messages2.html").write_text(PAGE_2.replace("see you there", "see you!"), encoding="utf-8")
    assert resolve_inputs(IngestParams(inputs=[spec]))[0].sha256 != before
    [named] = resolve_inputs(IngestParams(inputs=[InputSpec(path=str(first))]))
    assert named.path == str(first)
    assert resolve_inputs(IngestParams(inputs=[InputSpec(path=str(first.parent / "messages2.html"))])) == []


def test_an_html_page_that_is_no_export_is_refused(tmp_path):
    other = tmp_path / "index.html"
    other.write_text("<!DOCTYPE html><html><head><title>My blog</title></head><body><p>hi</p></body></html>",
                     encoding="utf-8")
    with pytest.raises(InputFileError, match=r"index\.html: cannot tell what kind"):
        detect_kind(other)
    with pytest.raises(InputFileError, match=r"^[^\n]*index\.html: [^\n]*not a Telegram Desktop HTML export"):
        read_telegram_html_export(other)
    binary = tmp_path / "messages.html"
    binary.write_bytes(b"\x00\xff\xfe binary")
    with pytest.raises(InputFileError, match=r"messages\.html: "):
        read_telegram_html_export(binary)
    assert not looks_like_telegram_html(binary)


# --- damaged pages ----------------------------------------------------------------------------------------------


def test_a_cut_off_last_page_keeps_its_complete_messages(tmp_path):
    cut_at = PAGE_2.index("Which Saturday?")  # inside message 19
    first = write_export(tmp_path / "cut", PAGE_1, PAGE_2[:cut_at])
    skips = SkipCounter()
    [chat] = read_telegram_html_export(first, skips)
    assert [m.text for m in chat.messages][-1] == "see you there"  # 18 kept, 19 cut, 20 and 21 lost
    assert len(chat.messages) == 9
    assert skips.counts == {"telegram_truncated_export": 1}
    assert chat.stats["skipped"] == {"telegram_truncated_export": 1} and chat.stats["truncated"] is True
    assert "messages2.html" in skips.examples["telegram_truncated_export"]
    # cut right after a message's closing tag: that message is complete and kept
    end_of_18 = PAGE_2.index('<div class="message default clearfix" id="message19">')
    [chat] = read_telegram_html_export(write_export(tmp_path / "cut2", PAGE_1, PAGE_2[:end_of_18].rstrip()))
    assert chat.messages[-1].text == "see you there"
    # cut inside a character
    data = PAGE_1.replace("and snacks", "and snacks 🥨").encode()
    (tmp_path / "cut3").mkdir()
    (tmp_path / "cut3" / "messages.html").write_bytes(data[:data.index("🥨".encode()) + 2])
    [chat] = read_telegram_html_export(tmp_path / "cut3" / "messages.html")
    assert [m.text for m in chat.messages] == ['Priya created group "Hike crew"',
                                               "Morning! Who's in?\nBring boots & water"]


def test_a_page_cut_before_its_first_message_is_refused(tmp_path):
    first = write_export(tmp_path / "cut", PAGE_1[:PAGE_1.index('<div class="history">')])
    with pytest.raises(InputFileError, match=r"messages\.html: .*ends early.*before its first complete message"):
        read_telegram_html_export(first)


def test_a_message_without_a_date_is_skipped_and_counted_with_its_file_and_id(tmp_path):
    broken = PAGE_2.replace('title="02.04.2024 08:00:00 UTC+02:00"', "").replace(
        'title="02.04.2024 08:01:00 UTC+02:00"', 'title="yesterday"')
    first = write_export(tmp_path / "nodate", PAGE_1, broken)
    skips = SkipCounter()
    [chat] = read_telegram_html_export(first, skips)
    assert len(chat.messages) == 10 and skips.counts == {"telegram_bad_date": 2}
    assert "messages2.html" in skips.examples["telegram_bad_date"]
    assert "message18" in skips.examples["telegram_bad_date"]


def test_a_huge_page_is_read_whole(tmp_path):
    lines = "<br>".join(f"line {i} &amp; more" for i in range(100_000))
    many = "".join(message(i, "01.04.2024 09:00:00", text(f"number {i}"), "Kim" if i == 1 else None)
                   for i in range(1, 5001))
    first = write_export(tmp_path / "huge", page(many + message(9999, "01.04.2024 10:00:00", text(lines), "Sam")))
    [chat] = read_telegram_html_export(first)
    assert len(chat.messages) == 5001 and chat.stats["authors"] == {"Kim": 5000, "Sam": 1}
    assert chat.messages[-1].text.count("\n") == 99_999 and chat.messages[-1].text.endswith("line 99999 & more")
