"""Reading Meta's "Download your information" JSON exports of Facebook Messenger and Instagram direct messages into
chats like the WhatsApp `.txt` parser's.

Where the files are: one folder per conversation, `messages/inbox/<name>_<id>/message_1.json`, `message_2.json`…
(also `archived_threads/`, `filtered_threads/`, `message_requests/`, `e2ee_cutover/`; newer Facebook exports put
`messages/` under `your_facebook_activity/`, newer Instagram ones under `your_instagram_activity/`). A file holds
at most 10,000 messages, newest first, so one conversation is split across `message_1.json` (the newest) …
`message_N.json` (the oldest).

The download's default format is HTML (JSON must be chosen): the same folders hold `message_1.html`,
`message_2.html`…, read by `tasks.messenger_html` into the chat the JSON gives, as far as the pages carry it (its
docstring says what is not read). Everything here (parts, folders, zips, a download in parts) takes a conversation's
`message_N.html` as it takes its `message_N.json`; a folder holding both forms reads each apart.

Two shapes of JSON file are read:

- the "Download your information" shape (Facebook and Instagram alike): `participants` [{`name`}], `title`,
  `is_still_participant`, `thread_path` ("inbox/<name>_<id>"), `thread_type` ("Regular", "RegularGroup"),
  `image`, `joinable_mode`, `magic_words` and `messages` [{`sender_name`, `timestamp_ms`, `content`, `type`
  (Generic, Share, Call, Subscribe, Unsubscribe…; left out by 2024 exports), `is_unsent`, `photos`, `videos`,
  `audio_files`, `gifs`, `files`, `sticker` {`uri`}, `share` {`link`, `share_text`}, `call_duration`, `missed`,
  `users` [{`name`}] (who was added or removed), `reactions` [{`reaction`, `actor`}], `is_geoblocked_for_viewer`}].
  Exports from 2018 wrote `timestamp` in seconds instead of `timestamp_ms`; both are read.
- the end-to-end encrypted chats' download (messenger.com/secure_storage/dyi, one `<name>_<n>.json` per chat
  beside a shared `media/` folder): `participants` [names as strings], `threadName` and `messages` [{`senderName`,
  `timestamp` (ms), `text`, `type` (text, link, media, placeholder), `isUnsent`, `media` [{`uri`}],
  `reactions`}], oldest first.

Sources of these facts (read for facts only): the format notes "Facebook Messenger JSON Schema" of a public
Messenger-to-database tool, chat-analytics' Messenger.d.ts ("the messages array is limited to 10k items"),
demuxfb's rules (the English wording of events written as ordinary messages), Stack Overflow 50008296 and
52747566 and Chatistics issue #43 (the encoding), adurivault/FBMessage PR #5 (2024 exports without `type`, the
encrypted-chat download), RLEAPP's facebookE2EMessages.py and several open parsers' fixtures (the e2ee keys,
"Failed to download media" written for a media file that could not be exported).

The encoding quirk: the DYI exports write each UTF-8 *byte* of a text as its own `\\u00XX` escape, so that a JSON
parser reads "é" as "Ã©" and an emoji as four characters below U+0100. It is repaired string by string (encode as
Latin-1, decode as UTF-8), and only where that can be right. A string is repaired only when it is all below
U+0100 and its bytes are valid UTF-8: text that is really Latin-1 ("SÃO PAULO", "café": a lead byte followed by a
letter) never is, and a string holding a character above U+00FF (Chatistics #65 met curly quotes among the
mojibake) is left as written. And a file is repaired at all only when, of its non-ASCII strings (title,
participants, senders, texts), at least as many decode that way as do not: a copy that a tool already repaired,
or the e2ee download (clean UTF-8), is left alone even where it holds a look-alike pair such as "Ã©". What could
still be misread is such a pair in a file where nothing else tells (only ASCII besides), which real text is not.

Kinds: text; "media" with a placeholder worded like WhatsApp's ("image omitted", the text on the next line);
"deleted" ("This message was deleted") for an unsent message; "system", without author, for Subscribe,
Unsubscribe and Call records and for the events Messenger writes as ordinary messages in English ("… named the
group …", "… changed the group photo.", "… set the nickname for …", "The video chat ended.", "You are now
connected on Messenger"…; French and Polish wording too, where real exports were found quoted; other languages'
stay text, as no export quoting them was found), and, in any language, a record without `type` that carries a
call's (`call_duration`, `missed`) or a membership change's (`users`) fields; "poll" ("POLL:" and
the question, as the WhatsApp database reader writes a poll whose options it does not hold) for "… created a
poll: …". A shared link is text (the link on its own line after what was written with it, as WhatsApp's export
shows it); a share without a link (a live location, a post) is the generic media placeholder. Reactions are
not messages, and neither are Instagram's notices of one ("Liked a message", "… reacted 👍 to your message",
English only): those are skipped and counted (`messenger_reaction_notice`). "… sent an attachment." and "… sent a
link." beside the attachment or link are left out of the text, and stand for it where it was not exported; so are
French, German, Polish and Spanish notes found quoted ("… a envoyé une pièce jointe.", "… hat einen Anhang
gesendet.", "… wysłał załącznik.", "Wysłałeś(aś) link.", "Enviaste un archivo adjunto."). Timestamps are UTC epochs
written as local time in `tz` (default UTC).

The download comes as a `.zip`, read as the folder it unzips to (`ExportArchive`: every conversation in it, a
conversation's parts together, the same chats and ids as unzipped), member by member and never extracted, photos
and videos left unread. A large download comes as several zips that unzip to the same layout, each with some of
the files, so that one conversation's `message_1.json` can be in one zip and its `message_2.json` in another (what
was found about it, and where: the section "a download in parts" below). The inputs of one reading (ingest's run,
`read_messenger_exports`), zips, the folders they were unzipped to or both, are read as if all had been unzipped
into one folder: a conversation at the same folder below `messages/` in several of them, whose parts complete each
other, is one chat with the chat id, rows and stats the single folder gives (and `part_files`, where each part was
read), given by the input that holds its first part and by no other (`find_split_conversations`); a part found
twice is read once. The zips' names play no part. A conversation found in several inputs whose copies differ in
some part is of two downloads made at different times, and one that every input holds whole is a copy: each input
reads its own, as when given alone, and `tasks.chat_merge` merges the copies. What is not joined: a conversation
split over the zips of one download that also lies, different, in another download of the same run; its parts are
then read one by one, as before.

A file that ends early (a download or copy cut short) keeps every complete message before the cut, as Telegram's
reader does: the top object and its `messages` list are read member by member (`chat_records.read_cut_json`), a
message is kept whole or not at all. What the DYI shape writes after its messages (`title`, `thread_path`,
`is_still_participant`, `thread_type`) is lost with the cut and taken from the conversation's other parts when
there are some. The cut is counted once, `messenger_truncated_export` in the skip counter and the chat's
`stats["skipped"]`, located by the byte offset where reading stopped (with the part's name when the conversation
has several), and flagged in the chat's stats: `truncated` True, `truncated_at_byte`, `truncated_parts`. One
warning names the file. As every part lists its messages newest first, what is lost of a DYI part is its oldest
messages.

What is refused (InputFileError, one line naming the file): not UTF-8, not JSON (with line and column; a syntax
error before the end, or a file that ends early before its first complete message, "it ends early"), JSON without a
`messages` list or whose messages are not Messenger's. A record that cannot be read (not an object, no usable
time or sender, a text of the wrong type, nothing to show) is skipped and counted with the file and message
number.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path

from tasks.chat_records import (
    DYI_MEDIA_KEYS,
    MEDIA,
    MEDIA_BY_EXTENSION,
    STICKER,
    ChatSkips,
    ExportArchive,
    JsonCut,
    SourceMessage,
    UnsafeArchiveError,
    build_chat,
    chat_id_for,
    combined_sha256,
    file_sha256,
    is_zip_name,
    local_time,
    numbered_parts,
    read_cut_json,
    read_export_bytes,
    resolve_tz,
)
from tasks.records import InputFileError, SkipCounter, without_surrogates
from tasks.whatsapp.parser import WhatsAppChat

SOURCE = "messenger"
INSTAGRAM = "instagram"
DELETED_TEXT = "This message was deleted"
_WHAT = "a Messenger/Instagram JSON export"
_PART = re.compile(r"^message_(\d+)\.(?:json|html?)$", re.IGNORECASE)  # the JSON form's parts, the HTML form's
_READ_SUFFIXES = (".json", ".html", ".htm")
_TRAILING_NUMBER = re.compile(r"_\d+$")
_SYSTEM_TYPES = ("Subscribe", "Unsubscribe", "Call")
# Events written as an ordinary message, after the actor's name (or "You"): Messenger's English wording.
_ACTOR_EVENT = re.compile(
    r"(?:named the group\b|changed the group photo\.?$|removed the group photo\.?$|"
    r"set the nickname for .+|set your nickname to .+|set (?:his|her|their|your) own nickname to .+|"
    r"cleared (?:the|your|his|her|their) (?:own )?nickname|set the emoji to .+|changed the chat theme\.?$|"
    r"changed the theme to .+|set the quick reaction to .+|started a video chat\.?$|started a call\.?$|"
    r"joined the video chat\.?$|joined the call\.?$|started sharing video\.?$|"
    r"(?:added|removed) .+ as a group admin\.?$|voted for .+ in the poll: .+|"
    r"(?:removed|changed) (?:your |his |her |their )?vote (?:for|to) .+|started a plan\.?$|named the plan .+|"
    r"updated the plan to .+|deleted the plan .+|responded (?:Going|Can't Go|Not Going) to .+|"
    r"waved hello to the group\.?$|left the group\.?$|added .+ to the group\.?$|removed .+ from the group\.?$|"
    r"joined the group(?: via .+)?\.?$|pinned a message\.?$|unpinned a message\.?$|"
    r"missed a (?:video )?call from .+|missed (?:a|your) (?:video )?(?:call|chat) with .+|called you\.?$|"
    r"turned (?:on|off) member approval.*|changed the group description.*|turned on disappearing messages.*|"
    r"turned off disappearing messages.*)",
    re.IGNORECASE,
)
_WHOLE_EVENT = re.compile(
    r"^(?:The video chat ended\.?|The call ended\.?|You are now connected on Messenger\.?|"
    r"Say hi to your new Facebook friend,? .+|This poll is no longer available\.?|You missed a (?:video )?call "
    r"from .+|You called .+|.+ missed your (?:video )?call\.?|"
    r"Messages and calls are secured with end-to-end encryption.*|"
    r"Messages and calls are now secured with end-to-end encryption.*)$",
    re.IGNORECASE | re.DOTALL,
)
_POLL = re.compile(r"created a poll: (.+?)\.?$", re.IGNORECASE | re.DOTALL)
# Instagram's notices of a reaction, written as a message of their own: whole, or after the reacting person's name
_REACTION_NOTICE = re.compile(r"(?:Liked a message|Reacted .{1,16} to your message|Reacted to your message)",
                              re.IGNORECASE | re.DOTALL)
_ACTOR_REACTION = re.compile(r"(?:reacted .{1,16} to your message|liked a message)", re.IGNORECASE | re.DOTALL)
# "<name> sent an attachment." beside the attachment (or where it was not exported), after the sender's name
_ATTACHMENT_NOTE = re.compile(
    r"(?:sent an? (?:attachment|link|photo|video|GIF|sticker|voice message)|"
    r"(?:a|avez) envoyé (?:une pièce jointe|un lien|un sticker)|"  # French: source (a) below
    r"hat einen Anhang gesendet|"  # German: tdauth/qronicle README.md, a 2024 export's message beside a `share`
    r"wysłał(?:a|\(a\))? (?:załącznik|link)|przesyła załącznik)\.?",  # Polish: sources (c) and (d) below
    re.IGNORECASE)
# the same note where the account holder sent it, written whole: Polish (c), Spanish (e: an Instagram export)
_WHOLE_ATTACHMENT_NOTE = re.compile(r"(?:Wysłałeś\(aś\) (?:załącznik|link)|Enviaste un archivo adjunto|"
                                    r"Te envió un archivo adjunto)\.?", re.IGNORECASE)
# Events in a French account's export, after the actor's name or "Vous" ("Vous avez nommé le groupe …"). Only wording
# quoted from real exports, by two public scripts that clean French Messenger exports, found in the code index without
# their repository's name: (a) an HTML-export-to-CSV filter listing "non_human_generated_sequences", (b) a
# message.json cleaner ("special_content", "special_content_first_person"). The "avez" form is read for every verb,
# where (a) and (b) quote it for some.
_ACTOR_EVENT_FR = re.compile(
    r"(?:a|avez) (?:nommé le groupe .+|changé la photo du groupe\.?|retiré la photo de groupe\.?|"
    r"supprimé le nom du groupe\.?|quitté le groupe\.?|ajouté .+ au groupe\.?|retiré .+ du groupe\.?|"
    r"défini l['’]emoji sur .+|surnommé .+|défini (?:votre|son propre) pseudo sur .+|défini le pseudo de .+|"
    r"choisi le pseudo .+|effacé son propre pseudo\.?|modifié les couleurs de la discussion\.?|"
    r"démarré (?:un appel|une discussion vidéo(?: de groupe)?)\.?|rejoint l['’]appel(?: vidéo de groupe)?\.?|"
    r"rejoint la discussion vidéo\.?|commencé à partager une vidéo\.?|voté pour .+ dans le sondage.*|"
    r"(?:retiré|modifié) son vote pour .+|commencé un plan\.?|mis à jour le plan.*|"
    r"répondu (?:Participe|Ne participe pas) .+)",
    re.IGNORECASE | re.DOTALL,
)
_WHOLE_EVENT_FR = re.compile(
    r"(?:La discussion vidéo est terminée|Discussion vidéo terminée|L['’]appel est terminé)\.?", re.IGNORECASE)
# Events in a Polish account's export, after the actor's name, and whole. Only wording quoted from real exports, by
# two public tools found in the code index without their repository's name: (c) a Messenger conversation importer's
# list of "MessageContentFilters" with its tests (HTML-era files), (d) a cleaner of a 2024 `your_facebook_activity`
# download's message.json. (c) and (d) quote some verbs in the masculine ("dodał"), some in the feminine
# ("ustawiła") and some as "nadał(a)"; every verb is read in the three forms, by Polish grammar, not by a quote.
_ACTOR_EVENT_PL = re.compile(
    r"(?:nadał(?:a|\(a\))? nazwę grupy .+|dodał(?:a|\(a\))? .+ do grupy|"
    r"usun(?:ął(?:\(ęła\))?|ęła) (?:użytkownika .+ z grupy|członka grupy|Ciebie z grupy)|"
    r"utworzył(?:a|\(a\))? plan|nazwał(?:a|\(a\))? plan: .+|"
    r"zmienił(?:a|\(a\))? (?:godzinę|lokalizację) planu na .+|ustawił(?:a|\(a\))? pseudonim\b.*|"
    r"zmienił(?:a|\(a\))? kolor czatu\b.*)\.?",
    re.IGNORECASE | re.DOTALL,
)
_WHOLE_EVENT_PL = re.compile(
    r"(?:Opuściłeś\(aś\) grupę|Utworzyłeś przypomnienie: .+|"
    r"(?:Twoja odpowiedź|Odpowiedź .+) na wydarzenie .+: (?:Wezmę udział|Nie mogę wziąć udziału))\.?",
    re.IGNORECASE,
)
log = logging.getLogger(__name__)


def looks_like_messenger(path: str | os.PathLike, head_bytes: int = 16384) -> bool:
    """Cheap sniff for input-kind detection: a `.json` whose head reads like a Messenger or Instagram message file
    (the DYI shape's `sender_name`/`timestamp_ms`, or the e2ee download's `senderName`/`threadName`). Never true
    for a Telegram export (`from`, `date_unixtime`), so it can be asked first."""
    try:
        with open(path, "rb") as f:
            head = f.read(head_bytes)
    except OSError:
        return False
    return _messenger_head(head)


def _messenger_head(data: bytes) -> bool:
    head = data.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if not head.startswith("{") or '"messages"' not in head and '"participants"' not in head:
        return False
    if '"sender_name"' in head and ('"timestamp_ms"' in head or '"timestamp"' in head):
        return True
    if '"participants"' in head and ('"is_still_participant"' in head or '"thread_path"' in head):
        return True  # a chat without messages, or a group whose participants fill the head
    return '"senderName"' in head or '"threadName"' in head


def looks_like_messenger_archive(path: str | os.PathLike, sniffed: int = 50) -> bool:
    """Cheap sniff for input-kind detection: a zip holding a conversation's `message_N.json` (Meta's "Download your
    information" of Facebook or Instagram), or, among its first `sniffed` other JSON files, one that reads like a
    Messenger chat (the e2ee download). Never raises."""
    try:
        with ExportArchive(path) as archive:
            files = [f for f in archive.files() if f.suffix.lower() == ".json" and not _hidden(f, archive.path)]
            if any(part_number(f) is not None for f in files):
                return True
            if any(_looks_like_chat_file(f, archive) for f in files[:sniffed]):
                return True
            pages = [f for f in archive.files() if _is_html_part(f) and not _hidden(f, archive.path)]
            return any(_html_page(f, archive) for f in pages[:sniffed])
    except InputFileError:
        return False


def _is_html_part(path: Path) -> bool:
    return part_number(path) is not None and path.suffix.lower() != ".json"


def _html_page(path: Path, archive: ExportArchive) -> bool:
    from tasks.messenger_html import messenger_html_head

    try:
        return messenger_html_head(archive.read_bytes(path, head=65536), path)
    except InputFileError:
        return False


def _hidden(path: Path, folder: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(folder).parts)


def part_number(path: str | os.PathLike) -> int | None:
    """N of a `message_N.json` (or of the HTML form's `message_N.html`), else None."""
    match = _PART.match(Path(path).name)
    return int(match.group(1)) if match else None


def chat_parts(path: str | os.PathLike) -> list[Path]:
    """The files of the conversation `path` belongs to: every `message_N.json` in its folder, by N (message_1,
    the newest, first); a file of another name alone."""
    path = Path(path)
    html = _is_html_part(path)  # the parts of the same form, JSON or HTML
    return numbered_parts(path, lambda p: part_number(p) if _is_html_part(p) == html else None)


def is_continuation_part(path: str | os.PathLike) -> bool:
    """True for a `message_N.json` that is not the first part of its folder: `read_messenger_export` reads it with
    the first one (and returns nothing for it alone)."""
    path = Path(path)
    return part_number(path) is not None and chat_parts(path)[0] != path


def conversation_sha256(path: str | os.PathLike) -> str:
    """The content hash of the conversation a `message_N.json` belongs to (all its parts, as `chat_parts`); a file's
    own sha256 for any other file. What ingest should key a Messenger input's work on: a later part that changes
    changes the chat read from `message_1.json`."""
    return combined_sha256([file_sha256(p) for p in chat_parts(path)])


# ----------------------------------------------------------------------------------------------- a download in parts

# Meta may deliver one download as several zips that unzip to the same layout, each with some of the files, so that
# one conversation's message_1.json and message_2.json can be in different zips. Found (for facts only): stepva/
# chatalysis's README ("It is possible that Facebook splits your data into multiple files. Download all of them and
# extract them into one folder") and its facebook_source.py, which gathers a chat's folders from every `inbox/`
# below the chosen folder; suitangi/Messenger-Analyzer's docs/DownloadData.md ("There may be multiple files
# depending on the size and date range you chose", unzipped as `facebook-username/`, `facebook-username (1)/`,
# `facebook-username (2)/`, each with its own `messages/`), whose main.js joins the files of one `thread_path`;
# greg-randall/memento-mori issues #2 (an Instagram download of 30 GB "sent to me in chunks") and #11 ("Instagram
# gives me 2 ZIP exports"; one zip is named `instagram-<user>-<date>-<8 letters>.zip`). How Meta names the parts
# of one download was not found, and the browser gives them " (1)", " (2)" when they share one, so parts are told
# by what they hold, not by their names: the same conversation folder below `messages/`, parts that complement
# each other and never differ where they overlap.
_ACTIVITY = re.compile(r"your_\w+_activity", re.IGNORECASE)


@dataclass(frozen=True)
class SplitConversation:
    """A conversation whose `message_N.json` parts lie in several places of one download (several of its zips, the
    folders they were unzipped to): read as one chat from `parts`, one copy of each, by the place holding the first
    part (`reader`); its other `places` give nothing for it. A place is (input, the conversation's folder), an
    input a zip, a folder or a message file as given."""

    key: str  # where it lies in every part: "messages/inbox/radoslaw_123"
    places: tuple[tuple[str, str], ...]
    reader: tuple[str, str]
    parts: tuple[tuple[str, str], ...]  # (input, file) of each part, by N

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i for i, _ in self.places))


def find_split_conversations(inputs: Sequence[str | os.PathLike]) -> list[SplitConversation]:
    """The conversations of one download split over `inputs` (zips, folders, message files, in any order): those
    found at the same folder below `messages/` in several places, where some place lacks a part another holds
    (a part in two places is read once) and no part differs between places. A conversation in several places
    whose copies differ is of different downloads (made at different times) and one that every place holds whole
    is a copy: neither is joined, each place reads its own, as a single input does (tasks.chat_merge merges the
    copies later). Inputs that cannot be read are passed over (their own reading says why)."""
    with ExitStack() as stack:
        return _find_split([str(Path(i)) for i in inputs], _Inputs(stack))


def _find_split(inputs: list[str], opened: _Inputs) -> list[SplitConversation]:
    places: dict[str, list[tuple[str, Path, dict[int, Path]]]] = {}
    for given in dict.fromkeys(inputs):
        for folder, parts in _conversation_folders(given, opened).items():
            key = _conversation_key(folder)
            if key is not None:
                places.setdefault(key, []).append((given, folder, parts))
    found = (_join(key, held, opened) for key, held in sorted(places.items()) if len(held) > 1)
    return [c for c in found if c is not None]


def _conversation_folders(given: str, opened: _Inputs) -> dict[Path, dict[int, Path]]:
    """The conversation folders of an input, each with its parts by N."""
    path = Path(given)
    try:
        archive = opened.archive(given)
        if archive is not None:
            files = [f for f in archive.files() if not _hidden(f, path)]
        elif path.is_dir():
            files = [f for f in path.rglob("message_*") if not _hidden(f, path) and f.is_file()]
        else:
            files = chat_parts(path) if part_number(path) is not None else []
    except InputFileError:
        return {}
    folders: dict[Path, dict[int, Path]] = {}
    for file in sorted(files):
        if (number := part_number(file)) is not None:
            folders.setdefault(file.parent, {}).setdefault(number, file)
    return folders


def _conversation_key(folder: Path) -> str | None:
    """Where a conversation folder lies in any part of its download: its path from `messages/` on (with the
    `your_…_activity/` above it), None outside a `messages/` folder."""
    names = folder.parts
    at = next((i for i in range(len(names) - 2, -1, -1) if names[i].lower() == "messages"), None)
    if at is None:
        return None
    if at > 0 and _ACTIVITY.fullmatch(names[at - 1]):
        at -= 1
    return "/".join(names[at:])


def _join(key: str, held: list[tuple[str, Path, dict[int, Path]]], opened: _Inputs) -> SplitConversation | None:
    """The conversation `key`'s places joined, or None when they are copies (each holds every part) or differ."""
    held = sorted(held, key=lambda h: (h[0], str(h[1])))
    numbers = sorted({n for _, _, parts in held for n in parts})
    if all(len(parts) == len(numbers) for _, _, parts in held):
        return None
    reader = min(held, key=lambda h: (min(h[2]), h[0], str(h[1])))
    chosen = []
    in_order = [reader, *(h for h in held if h is not reader)]
    for n in numbers:  # the reader's copy of a part, else the first place's
        copies = [(given, parts[n]) for given, _, parts in in_order if n in parts]
        if not all(opened.same_bytes(copies[0], other) for other in copies[1:]):
            return None
        chosen.append((copies[0][0], str(copies[0][1])))
    places = tuple((given, str(folder)) for given, folder, _ in held)
    return SplitConversation(key, places, (reader[0], str(reader[1])), tuple(chosen))


def _part_files(conversation: SplitConversation, opened: _Inputs) -> list[tuple[Path, ExportArchive | None]]:
    return [(Path(file), opened.archive(given)) for given, file in conversation.parts]


class _Inputs:
    """The inputs of a reading, each zip opened once (until the ExitStack closes), and whether two parts hold the
    same bytes wherever they lie: told apart by their size (and a zip's CRC) before their bytes are hashed."""

    def __init__(self, stack: ExitStack) -> None:
        self._stack = stack
        self._archives: dict[str, ExportArchive | None] = {}
        self._digests: dict[tuple[str, Path], str] = {}

    def archive(self, given: str) -> ExportArchive | None:
        """The zip `given` opened, None for anything else."""
        if given not in self._archives:
            path = Path(given)
            is_zip = is_zip_name(path) and path.is_file()
            self._archives[given] = self._stack.enter_context(ExportArchive(path)) if is_zip else None
        return self._archives[given]

    def same_bytes(self, a: tuple[str, Path], b: tuple[str, Path]) -> bool:
        """Whether the part at `a` holds the bytes of the part at `b` ((input, path) each); False when one cannot
        be read."""
        try:
            (size_a, crc_a), (size_b, crc_b) = self._checksum(*a), self._checksum(*b)
            if size_a != size_b or None not in (crc_a, crc_b) and crc_a != crc_b:
                return False
            return self._digest(*a) == self._digest(*b)
        except InputFileError:
            return False

    def _checksum(self, given: str, path: Path) -> tuple[int, int | None]:
        archive = self.archive(given)
        if archive is not None:
            return archive.member_checksum(path)
        try:
            return path.stat().st_size, None
        except OSError as e:
            raise InputFileError(f"{path}: cannot be read ({e.strerror})") from None

    def _digest(self, given: str, path: Path) -> str:
        if (given, path) not in self._digests:
            archive = self.archive(given)
            digest = hashlib.sha256(archive.read_bytes(path)).hexdigest() if archive is not None else None
            self._digests[given, path] = digest or file_sha256(path)
        return self._digests[given, path]


def read_messenger_export(
    path: str | os.PathLike,
    skips: SkipCounter | None = None,
    *,
    tz: tzinfo | str | None = None,
    source: str | None = None,
    siblings: bool = True,
    split: Sequence[SplitConversation] | None = None,
) -> list[WhatsAppChat]:
    """The conversations of a Messenger or Instagram JSON export, one `WhatsAppChat` each, oldest message first.

    `path` is a message file, or a folder: a conversation's (`inbox/<name>_<id>/`) or a whole export's, in which
    every `message_N.json` and every e2ee chat file is read, one chat per conversation (other JSON files of the
    export are passed over); or the export's `.zip`, read as the folder it unzips to. For a file named
    `message_N.json`, `siblings=True` reads the conversation's other parts in the same folder with it, into one
    chat; the chat is returned for the first part present (normally `message_1.json`), and nothing for the later
    ones (`is_continuation_part`), so that a folder given file by file reads every conversation once.
    `siblings=False` reads the file alone. A file cut short keeps its complete messages (see the module's
    docstring).

    A download in several parts (Meta's zips of one download, the folders they were unzipped to): `split` is what
    `find_split_conversations` found in all the inputs of the run; a conversation of `path` that it names is read
    whole, its parts taken from the other inputs too, when `path` holds its first part, and gives nothing otherwise
    (`read_messenger_exports` reads several inputs so). Left None, the conversations split within `path` itself
    (a folder holding each zip unzipped into its own folder) are found and joined.

    `source` is "messenger" or "instagram"; left None, it is "instagram" when a folder of the path says so
    (`your_instagram_activity`, `instagram-<user>-<date>`), else "messenger". `chat_id` is derived from the
    sha256 of the conversation's files and its own id (`thread_path`, else the folder or file name). Records that
    cannot be read are skipped and counted in `skips` and the chat's `stats["skipped"]`. Raises InputFileError
    naming the file when a file given on its own (or a part of its conversation) is not such an export; in a
    folder, such a file is counted (`messenger_unreadable_file`), logged, and the others read.
    """
    path = Path(path)
    skips = skips if skips is not None else SkipCounter()
    zone = resolve_tz(tz)
    if path.is_dir() or is_zip_name(path) and path.is_file():
        with ExitStack() as stack:
            inputs = _Inputs(stack)
            archive = inputs.archive(str(path))
            if archive is None:
                return _read_files(path, sorted(f for f in path.rglob("*")
                                                if f.suffix.lower() in _READ_SUFFIXES and f.is_file()),
                                   skips, zone, source, inputs, split)
            return _read_files(path, archive.files(), skips, zone, source, inputs, split)
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    if siblings and is_continuation_part(path):
        log.info("%s: read with %s, the first part of its conversation", path, chat_parts(path)[0].name)
        return []
    place = (str(path), str(path.parent))
    joined = next((c for c in split or () if place in c.places), None) if siblings else None
    if joined is not None:
        if joined.reader != place:
            log.info("%s: read with %s, the first part of its conversation", path, joined.parts[0][1])
            return []
        with ExitStack() as stack:
            return [_read_chat(_part_files(joined, _Inputs(stack)), skips, zone, source or source_for(path))]
    parts = chat_parts(path) if siblings else [path]
    return [_read_chat([(p, None) for p in parts], skips, zone, source or source_for(path))]


def read_messenger_exports(
    paths: Sequence[str | os.PathLike],
    skips: SkipCounter | None = None,
    *,
    tz: tzinfo | str | None = None,
    source: str | None = None,
) -> list[WhatsAppChat]:
    """The conversations of several inputs (zips, folders, message files) read together: those of one download
    split over them are read as if all had been unzipped into one folder (`find_split_conversations`), each
    input's other chats as `read_messenger_export` gives them."""
    split = find_split_conversations(paths)
    skips = skips if skips is not None else SkipCounter()
    return [chat for path in paths
            for chat in read_messenger_export(path, skips, tz=tz, source=source, split=split)]


def source_for(path: str | os.PathLike) -> str:
    """"instagram" when a folder or file name of `path` names Instagram (for a `.zip`, also a folder inside it:
    `your_instagram_activity/`), else "messenger"."""
    path = Path(path)
    if any("instagram" in part.lower() for part in path.parts):
        return INSTAGRAM
    if is_zip_name(path) and path.is_file():
        try:
            with ExportArchive(path) as archive:
                return next((source_for(f) for f in archive.files() if part_number(f) is not None), SOURCE)
        except InputFileError:
            return SOURCE
    return SOURCE


def _read_files(folder: Path, files: list[Path], skips: SkipCounter, zone: tzinfo, source: str | None,
                inputs: _Inputs, split: Sequence[SplitConversation] | None) -> list[WhatsAppChat]:
    """The chats of a folder's (or a zip's) sorted `files`: one per conversation folder of `message_N.json`, one per
    e2ee chat file; other files are passed over, an unreadable conversation is counted and logged. A conversation
    of `split` (found here when None) is read whole where its first part is, and passed over elsewhere."""
    archive = inputs.archive(str(folder))
    if split is None:
        split = _find_split([str(folder)], inputs)
    joined = {place: c for c in split for place in c.places if place[0] == str(folder)}
    groups: dict[Path, list[Path]] = {}
    singles: list[Path] = []
    for file in files:
        if file.suffix.lower() not in _READ_SUFFIXES or _hidden(file, folder):
            continue
        if part_number(file) is not None:
            groups.setdefault((file.parent, _is_html_part(file)), []).append(file)
        elif file.suffix.lower() == ".json" and _looks_like_chat_file(file, archive):
            singles.append(file)
    chats, left = [], 0
    conversations = [[(p, archive) for p in sorted(parts, key=lambda p: (part_number(p), p.name))]
                     for parts in groups.values()]
    for parts in conversations + [[(single, archive)] for single in singles]:
        place = (str(folder), str(parts[0][0].parent))
        if place in joined:
            if joined[place].reader != place:
                log.info("%s: read with %s, the first part of its conversation", parts[0][0].parent,
                         joined[place].parts[0][1])
                left += 1
                continue
            parts = _part_files(joined[place], inputs)
        try:
            chats.append(_read_chat(parts, skips, zone, source or source_for(parts[0][0])))
        except UnsafeArchiveError:
            raise
        except InputFileError as e:
            log.warning("%s", e)
            skips.skip("messenger_unreadable_file", str(parts[0][0]), str(e))
    if not chats and not left and not skips.counts.get("messenger_unreadable_file"):
        where = "archive" if archive is not None else "folder"
        raise InputFileError(f"{folder}: no Messenger or Instagram message file (message_N.json, message_N.html) in "
                             f"the {where}")
    return chats


def _looks_like_chat_file(path: Path, archive: ExportArchive | None) -> bool:
    if archive is None:
        return looks_like_messenger(path)
    try:
        return _messenger_head(archive.read_bytes(path, head=16384))
    except InputFileError:  # a member that cannot be inflated: no chat file, as an unreadable file on disk
        return False


@dataclass
class _Part:
    path: Path
    data: dict
    digest: str
    e2ee: bool
    repair: bool  # whether its texts are the DYI mojibake
    cut: JsonCut | None  # where the file ends early, None when it is whole


def _load_part(path: Path, archive: ExportArchive | None = None) -> _Part:
    raw = read_export_bytes(path) if archive is None else archive.read_bytes(path)
    digest = hashlib.sha256(raw).hexdigest()  # file_sha256's, from the bytes read
    data, cut = read_cut_json(path, _WHAT, "messages", raw)
    del raw
    e2ee = _check_shape(data, path)
    if cut is not None:
        log.warning("%s ends early (a cut download or copy?): kept its %d complete messages, the rest from byte %d on "
                    "is lost", path, cut.kept, cut.offset)
    return _Part(path, data, digest, e2ee, _is_mojibake(data, e2ee), cut)


def _check_shape(data: object, path: Path) -> bool:
    """Whether `data` is the e2ee shape (else the DYI one); InputFileError when it is neither."""
    if not isinstance(data, dict):
        raise InputFileError(
            f"{path}: JSON {type(data).__name__}, not an object with 'messages' (not a Messenger/Instagram export)")
    messages = data.get("messages")
    if not isinstance(messages, list):
        keys = ", ".join(map(str, list(data)[:6])) or "nothing"
        raise InputFileError(
            f"{path}: JSON without a 'messages' list (found {keys}), not a Messenger/Instagram message file "
            "(messages/inbox/<chat>/message_1.json)")
    records = [m for m in messages if isinstance(m, dict)]
    dyi = any("sender_name" in m or "timestamp_ms" in m for m in records)
    e2ee = any("senderName" in m for m in records)
    if records and not (dyi or e2ee):
        keys = ", ".join(sorted({str(k) for m in records[:20] for k in m})[:6])
        raise InputFileError(
            f"{path}: JSON with 'messages' but none with sender_name or senderName (found {keys}); another "
            "program's export, not Messenger/Instagram's")
    if not records and messages:
        raise InputFileError(f"{path}: 'messages' holds no objects, not a Messenger/Instagram export")
    if not messages and not any(k in data for k in ("participants", "title", "thread_path", "threadName")):
        raise InputFileError(f"{path}: JSON with an empty 'messages' and nothing else of a Messenger chat")
    return e2ee and not dyi or (not records and "threadName" in data)


def _read_chat(files: list[tuple[Path, ExportArchive | None]], skips: SkipCounter, zone: tzinfo,
               source: str) -> WhatsAppChat:
    """One chat of a conversation's parts (each a path and the zip it is read out of, None on disk), message_1
    first; the HTML form's by `tasks.messenger_html`."""
    if _is_html_part(files[0][0]):
        from tasks.messenger_html import read_html_chat

        return read_html_chat(files, skips, source, _read_dyi_message)
    parts = [_load_part(p, archive) for p, archive in files]
    first = parts[0]
    fix = _fixer(first.repair)
    where = str(first.path.parent if len(parts) > 1 else first.path)
    chat_skips = ChatSkips(skips, where)
    records: list[SourceMessage] = []
    for part in reversed(parts):  # the last part holds the oldest messages
        fix_part = _fixer(part.repair)
        read = _read_e2ee_message if part.e2ee else _read_dyi_message
        messages = part.data["messages"]
        numbered = list(enumerate(messages))
        if _newest_first(messages, part.e2ee):
            numbered.reverse()
        for number, message in numbered:
            locator = f"message {number}" if len(parts) == 1 else f"{part.path.name}:message {number}"
            record = read(message, locator, zone, fix_part, chat_skips)
            if record is not None:
                records.append(record)
    cut = [p for p in parts if p.cut is not None]
    for part in cut:  # counted after its messages' skips, as Telegram's reader counts it
        locator = f"byte {part.cut.offset}" if len(parts) == 1 else f"{part.path.name}@byte {part.cut.offset}"
        chat_skips.skip("messenger_truncated_export", locator,
                        f"the file ends early (a cut download?), {part.cut.kept} complete messages kept, the rest lost")
    data = first.data
    if first.cut is not None:  # what the DYI shape writes after its messages was lost: the other parts hold it too
        data = {**{k: v for p in reversed(parts[1:]) for k, v in p.data.items()}, **data}
    if first.e2ee:
        raw_name = data.get("threadName") if isinstance(data.get("threadName"), str) else None
        name = fix(_TRAILING_NUMBER.sub("", raw_name)) if raw_name else None
        own_id = raw_name or first.path.stem
        participants = [fix(p) for p in data["participants"] if isinstance(p, str)] \
            if isinstance(data.get("participants"), list) else None
        chat_type = None
    else:
        name = fix(data["title"]) if isinstance(data.get("title"), str) else None
        own_id = data["thread_path"] if isinstance(data.get("thread_path"), str) else first.path.parent.name
        listed = data.get("participants")
        participants = [fix(p["name"]) for p in listed if isinstance(p, dict) and isinstance(p.get("name"), str)] \
            if isinstance(listed, list) else None
        chat_type = data["thread_type"] if isinstance(data.get("thread_type"), str) else None
    if chat_type is None and participants is not None:
        chat_type = "group" if len(participants) > 2 else "one-to-one"
    digest = combined_sha256([p.digest for p in parts])
    extra = {
        "chat_type": chat_type,
        "source_chat_id": without_surrogates(own_id),
        "participants": participants,
        "is_still_participant": data.get("is_still_participant") if isinstance(
            data.get("is_still_participant"), bool) else None,
        "export_shape": "e2ee" if first.e2ee else "dyi",
        "parts": [p.path.name for p in parts],
        "mojibake_repaired": any(p.repair for p in parts),
    }
    if cut:
        extra.update(truncated=True, truncated_at_byte=cut[0].cut.offset, truncated_parts=[p.path.name for p in cut])
    if len({p.path.parent for p in parts}) > 1:  # a download in several parts: where each part was read
        extra["part_files"] = [str(p.path) for p in parts]
    return build_chat(
        records,
        chat_id=chat_id_for(digest, own_id),
        path=first.path,
        source=source,
        name=name,
        skipped=dict(chat_skips.counts),
        extra=extra,
    )


def _newest_first(messages: list, e2ee: bool) -> bool:
    """Whether a part lists its messages newest first (the DYI files do; the e2ee download does not): told by its
    first and last readable times, else by the shape."""
    key = "timestamp" if e2ee else "timestamp_ms"
    stamps = [m.get(key, m.get("timestamp")) for m in (messages[0], messages[-1])
              if isinstance(m, dict)] if messages else []
    stamps = [s for s in stamps if isinstance(s, (int, float)) and not isinstance(s, bool)]
    if len(stamps) == 2 and stamps[0] != stamps[1]:
        return stamps[0] > stamps[1]
    return not e2ee


def _is_mojibake(data: dict, e2ee: bool) -> bool:
    """Whether a file's texts are the DYI mojibake: of its title's, participants', senders' and texts' strings that
    are not ASCII, at least as many read as UTF-8 bytes (and so are repaired) as do not (hold a character above
    U+00FF, or real Latin-1 text). A DYI file is all mojibake but for the odd string; a copy already repaired, or
    the e2ee download, has hardly a string that would decode."""
    sender, body = ("senderName", "text") if e2ee else ("sender_name", "content")
    listed = data.get("participants") if isinstance(data.get("participants"), list) else []
    names = [p.get("name") if isinstance(p, dict) else p for p in listed]
    values = [data.get("threadName" if e2ee else "title"), *names]
    values += [v for m in data["messages"] if isinstance(m, dict) for v in (m.get(sender), m.get(body))]
    decodes = other = 0
    for value in values:
        if isinstance(value, str) and not value.isascii():
            try:
                value.encode("latin-1").decode("utf-8")
                decodes += 1
            except (UnicodeEncodeError, UnicodeDecodeError):
                other += 1
    return decodes > 0 and decodes >= other


def _fixer(repair: bool):
    return repair_mojibake if repair else without_surrogates


def repair_mojibake(text: str) -> str:
    """`text` as it was written, when it is the DYI exports' UTF-8-read-as-Latin-1 ("Ã©" → "é"); else unchanged."""
    if text.isascii():
        return text
    try:
        return text.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return without_surrogates(text)


def _epoch_seconds(value: object, milliseconds: bool | None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    if milliseconds is None:  # `timestamp`: seconds in the 2018 exports, ms elsewhere (1e11 s is year 5138)
        milliseconds = abs(value) >= 1e11
    return value / 1000 if milliseconds else float(value)


def _time(message: dict, e2ee: bool, zone: tzinfo) -> datetime | None:
    if e2ee:
        seconds = _epoch_seconds(message.get("timestamp"), None)
    elif "timestamp_ms" in message:
        seconds = _epoch_seconds(message.get("timestamp_ms"), True)
    else:
        seconds = _epoch_seconds(message.get("timestamp"), None)
    try:
        return local_time(seconds, zone) if seconds is not None else None
    except (OverflowError, OSError, ValueError):
        return None


def _read_dyi_message(message: object, locator: str, zone: tzinfo, fix, skips: ChatSkips) -> SourceMessage | None:
    if not isinstance(message, dict):
        skips.skip("messenger_malformed_message", locator, f"a {type(message).__name__}, not an object")
        return None
    timestamp = _time(message, False, zone)
    if timestamp is None:
        found = message.get("timestamp_ms", message.get("timestamp"))
        skips.skip("messenger_bad_timestamp", locator, repr(found)[:60])
        return None
    sender = message.get("sender_name")
    if not isinstance(sender, str) or not sender.strip():
        skips.skip("messenger_no_sender", locator, f"sender_name {sender!r}"[:60])
        return None
    author = fix(sender).strip()
    content = message.get("content", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        skips.skip("messenger_malformed_message", locator, f"content is a {type(content).__name__}")
        return None
    text = fix(content).strip()
    kind_of_record = message.get("type")
    if message.get("is_unsent") is True:
        return SourceMessage(locator, timestamp, author, DELETED_TEXT, "deleted")
    if kind_of_record in _SYSTEM_TYPES or kind_of_record is None and _event_fields(message):
        return SourceMessage(locator, timestamp, None, text or _event_text(message, author, fix), "system")
    placeholder = _dyi_placeholder(message)
    share = message.get("share") if isinstance(message.get("share"), dict) else None
    if placeholder is not None or share is not None:
        if _attachment_note(text, author):
            text = ""
        link = share.get("link") if share is not None and isinstance(share.get("link"), str) else None
        if placeholder is None and link:
            link = fix(link).strip()
            body = text if link in text else f"{text}\n{link}".strip()
            return SourceMessage(locator, timestamp, author, body, "text")
        placeholder = placeholder or MEDIA
        return SourceMessage(locator, timestamp, author, f"{placeholder}\n{text}" if text else placeholder, "media")
    return _text_record(locator, timestamp, author, text, skips)


def _read_e2ee_message(message: object, locator: str, zone: tzinfo, fix, skips: ChatSkips) -> SourceMessage | None:
    if not isinstance(message, dict):
        skips.skip("messenger_malformed_message", locator, f"a {type(message).__name__}, not an object")
        return None
    timestamp = _time(message, True, zone)
    if timestamp is None:
        skips.skip("messenger_bad_timestamp", locator, repr(message.get("timestamp"))[:60])
        return None
    sender = message.get("senderName")
    if not isinstance(sender, str) or not sender.strip():
        skips.skip("messenger_no_sender", locator, f"senderName {sender!r}"[:60])
        return None
    author = fix(sender).strip()
    content = message.get("text", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        skips.skip("messenger_malformed_message", locator, f"text is a {type(content).__name__}")
        return None
    text = fix(content).strip()
    if message.get("isUnsent") is True:
        return SourceMessage(locator, timestamp, author, DELETED_TEXT, "deleted")
    media = message.get("media")
    if isinstance(media, list) and media:
        placeholder = _uri_placeholder(media[0].get("uri") if isinstance(media[0], dict) else None)
        if _attachment_note(text, author):
            text = ""
        return SourceMessage(locator, timestamp, author, f"{placeholder}\n{text}" if text else placeholder, "media")
    if message.get("type") == "placeholder":  # what Meta writes where it cannot show a message
        return SourceMessage(locator, timestamp, None, text or "message unavailable", "system")
    return _text_record(locator, timestamp, author, text, skips)


def _text_record(locator: str, timestamp: datetime, author: str, text: str,
                 skips: ChatSkips) -> SourceMessage | None:
    if not text:
        skips.skip("messenger_empty_message", locator, "no text, media or share")
        return None
    rest = _after_actor(text, author)  # what follows the sender's name: the events Meta writes as messages
    if _REACTION_NOTICE.fullmatch(text) or rest is not None and _ACTOR_REACTION.fullmatch(rest):
        skips.skip("messenger_reaction_notice", locator, text[:60])
        return None
    if _attachment_note(text, author):  # an attachment the export left out
        return SourceMessage(locator, timestamp, author, MEDIA, "media")
    poll = _POLL.match(rest) if rest is not None else None
    if poll is not None:
        return SourceMessage(locator, timestamp, author, f"POLL:\n{poll.group(1).strip()}", "poll")
    if _WHOLE_EVENT.match(text) or _WHOLE_EVENT_FR.fullmatch(text) or _WHOLE_EVENT_PL.fullmatch(text) or (
            rest is not None and "\n" not in rest and (
                _ACTOR_EVENT.match(rest) or _ACTOR_EVENT_FR.fullmatch(rest) or _ACTOR_EVENT_PL.fullmatch(rest))):
        return SourceMessage(locator, timestamp, None, text, "system")
    return SourceMessage(locator, timestamp, author, text, "text")


def _after_actor(text: str, author: str) -> str | None:
    """What follows the author's name (or "You", French "Vous") at the start of `text`, else None."""
    for actor in (author, "You", "Vous"):
        if text.startswith(actor) and text[len(actor):len(actor) + 1] == " ":
            return text[len(actor) + 1:]
    return None


def _attachment_note(text: str, author: str) -> bool:
    """Whether `text` is Meta's note of an attachment ("Ana sent an attachment.", "Wysłałeś(aś) załącznik.")."""
    if _WHOLE_ATTACHMENT_NOTE.fullmatch(text):
        return True
    rest = _after_actor(text, author)
    return rest is not None and _ATTACHMENT_NOTE.fullmatch(rest) is not None


def _dyi_placeholder(message: dict) -> str | None:
    for key, placeholder in DYI_MEDIA_KEYS:
        value = message.get(key)
        if isinstance(value, list) and value:
            return placeholder
    if isinstance(message.get("sticker"), dict):
        return STICKER
    return None


def _uri_placeholder(uri: object) -> str:
    if not isinstance(uri, str):
        return MEDIA
    extension = uri.rsplit(".", 1)[-1].lower() if "." in uri.rsplit("/", 1)[-1] else ""
    return MEDIA_BY_EXTENSION.get(extension, MEDIA)


def _event_fields(message: dict) -> bool:
    """Whether a record without `type` (2024 exports leave it out) carries a call's or a membership change's fields:
    `call_duration` or `missed` (a Call record's), `users` (who a Subscribe or Unsubscribe record added or removed).
    No message that someone wrote has them, so the record is an event in any language of the account."""
    seconds = message.get("call_duration")
    return (isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
            or isinstance(message.get("missed"), bool) or any(_dicts(message.get("users"))))


def _event_text(message: dict, author: str, fix) -> str:
    """The line of a Subscribe, Unsubscribe or Call record that has no `content` (English, like Telegram's)."""
    kind_of_record = message.get("type")
    users = message.get("users")
    names = ", ".join(fix(u["name"]) for u in _dicts(users) if isinstance(u.get("name"), str))
    if kind_of_record is None and names:  # a membership change without `type`: whether added or removed is not told
        return f"{author} changed the members: {names}"
    if kind_of_record == "Subscribe":
        return f"{author} added {names}" if names else f"{author} added members"
    if kind_of_record == "Unsubscribe":
        if not names or names == author:
            return f"{author} left the group"
        return f"{author} removed {names}"
    if message.get("missed") is True:
        return f"Missed call from {author}"
    seconds = message.get("call_duration")
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0:
        return f"{author} called ({int(seconds)} s)"
    return f"{author} called"


def _dicts(value: object) -> Iterable[dict]:
    return (v for v in value if isinstance(v, dict)) if isinstance(value, list) else ()
