"""Reading WhatsApp's own message databases into chats like the `.txt` parser's: Android's `msgstore.db`
(decrypted) and iOS's `ChatStorage.sqlite` (from a backup). One database holds every chat of the phone: the
reader returns one chat per chat row, with no 40,000-message cap, exact timestamps and quoted replies.

Schemas read (column names checked against open parsers: WhatsApp-Chat-Exporter's android_handler.py and
ios_handler.py, IPED's ExtractorAndroidNew.java and ExtractorIOS.java; nothing copied):

- Android, current (2021 on): `message(_id, chat_row_id, from_me, key_id, sender_jid_row_id, timestamp` in ms,
  `text_data, message_type)`, `chat(_id, jid_row_id, subject)`, `jid(_id, user, server, raw_string)`; optional:
  `message_quoted(message_row_id, key_id)` for replies, `message.origination_flags` (bit 1: forwarded),
  `message_system(message_row_id, action_type)`, `message_poll_option(message_row_id, option_name, vote_total)`,
  `jid_map(lid_row_id, jid_row_id)` (anonymous `@lid` members and chats → their phone jid),
  `lid_display_name(lid_row_id, display_name, username)` (the name an `@lid` person chose, for those `jid_map`
  does not map; `lid_row_id` is the `@lid` jid's row, as in WhatsApp's own `SELECT display_name, username FROM
  lid_display_name WHERE lid_row_id = ?`),
  `message_edit_info(message_row_id, original_key_id)` (an edited message is one row with its final text,
  kind "edited"; replies quote its original key id). Reactions (`message_add_on`) are not messages.
  `message_type`: 0 text, 1 image, 2 audio, 3 video, 4/14 contact(s), 5 location, 7 system, 8/10/11/90 call,
  9 document, 13 GIF, 15 deleted, 16 live location, 20 sticker, 36 timer change, 42/43/82 view-once media,
  64 deleted by an admin, 66/106 poll, 112 privacy notice; 99 (an album's container) and 116 (never shown)
  are skipped, counted; others are kept as media and counted in `stats["unknown_types"]`. `timestamp` is in
  milliseconds as WhatsApp writes it, or in seconds where most of the column's values say so (other tools).
- Android, legacy (before 2021): `messages(_id, key_remote_jid, key_from_me, key_id, status, data, timestamp`
  in ms, `media_wa_type, remote_resource)`; optional `media_caption`, `quoted_row_id` → `messages_quotes(_id,
  key_id)`, `chat_list(key_remote_jid, subject)`. `status` 6 is a system event, `edit_version` 7 a deleted
  message; `media_wa_type` as above.
- iOS: `ZWAMESSAGE(Z_PK, ZCHATSESSION, ZISFROMME, ZTEXT, ZMESSAGEDATE` in seconds since 2001-01-01 UTC,
  `ZMESSAGETYPE, ZFROMJID, ZGROUPMEMBER, ZSTANZAID)`, optional `ZFLAGS` (bit 7: forwarded), `ZGROUPEVENTTYPE`,
  `ZSORT`; `ZWACHATSESSION(Z_PK, ZCONTACTJID, ZPARTNERNAME)`; `ZWAGROUPMEMBER(Z_PK, ZMEMBERJID, ZCONTACTNAME)`
  (ZCONTACTNAME is often empty; then `ZFIRSTNAME`, then `ZWAPROFILEPUSHNAME(ZJID, ZPUSHNAME)`); replies from
  `ZWAMEDIAITEM(ZMESSAGE, ZTITLE, ZMETADATA)`, whose ZMETADATA protobuf starts with field 5 = the quoted
  stanza id. `ZMESSAGETYPE`: 0 text, 1 image, 2 video, 3 audio, 4 contact, 5 location, 6 group event,
  7 text with a link, 8 document, 10 call or notice (its own ZGROUPEVENTTYPE numbers), 11 GIF, 12 system,
  14 deleted, 15 sticker, 28/55/59 notices and calls, 38/39/53 view-once media, 46 poll, 54 video note;
  66 (an album's container) is skipped, counted. Columns other than Z_PK and ZCHATSESSION are optional.

Authors: the phone's owner (`from_me`) is `me`; others are the name the database holds (iOS: partner or member
name; Android: none, `msgstore.db` has no names — pass `contacts_db` for a `wa.db`), else the wa.db name, the
name an `@lid` person chose, the jid's user part (the phone number). A chat is named by its subject (iOS: partner
name), else as its person is. Timestamps are UTC epochs written as naive local time in `tz` (default UTC: pass
the phone's zone, e.g. "Europe/Paris", to match a `.txt` export of the same chat; `merge_chats` also finds a
whole offset by itself); a time before 2009 (WhatsApp did not exist) or more than a day after the database is
read is no time a message was sent, and its row is skipped, counted. Status (`status@broadcast`; iOS: one
`<number>@status` session per person) and broadcast lists (`<id>@broadcast`, whose messages are also in each
recipient's own chat) are not chats and are skipped, counted.

Nothing is written: a database without a `-wal` beside it is opened immutable (SQLite's `mode=ro` alone creates
`-wal`/`-shm` files for a WAL-mode database), one with a `-wal` is copied with it to a temporary folder first.
An encrypted backup (`.crypt12/14/15`), a non-SQLite file or a truncated copy is refused with a one-line
InputFileError; a damaged row (text that is not UTF-8, an impossible time) is skipped, counted.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import shutil
import sqlite3
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, tzinfo
from pathlib import Path
from urllib.parse import quote

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
    ChatSkips,
    SourceMessage,
    build_chat,
    chat_id_for,
    file_sha256,
    local_time,
    resolve_tz,
)
from tasks.records import InputFileError, SkipCounter
from tasks.whatsapp.parser import WhatsAppChat, read_head

log = logging.getLogger(__name__)

SQLITE_MAGIC = b"SQLite format 3\x00"
APPLE_EPOCH = 978307200  # 2001-01-01T00:00:00Z as a Unix time
# WhatsApp was first released in 2009: an older time is no time a message was sent, but a value read in the wrong
# unit (seconds as milliseconds: January 1970), an unset one (iOS 0: 2001-01-01) or a phone whose clock was reset
WHATSAPP_FIRST_DAY = 1230768000  # 2009-01-01T00:00:00Z as a Unix time
# A copy of a database holds no message sent after it is read; the day covers a phone clock set ahead (and zones)
_CLOCK_SLACK = 86400
_STATUS_JIDS = ("status@broadcast",)
# iOS keeps one Status pseudo-chat per person whose Status was seen, `<number>@status` or `<lid>@lid.status`
# (ZSESSIONTYPE 3), where Android has the one `status@broadcast`: amberkeep's docs/formats/ios.md (§5, measured on
# a real phone: 219 of 554 sessions) and IPED's ExtractorIOS.java (a ZCONTACTJID ending "@status" is Status)
_STATUS_SERVERS = ("status", "lid.status")
# Unix times in seconds from 2001-09-09 to the year 5138. Read as milliseconds these would be January 1970 to
# March 1973, long before WhatsApp (2009), whose millisecond times are all above 1.23e12: the two never overlap.
_SECONDS = (1e9, 1e11)

_ALBUM = ("hidden", "an album's container row (its photos are messages of their own)")
# Android message_type / media_wa_type → (kind, placeholder); "hidden": a row the app shows no message for
_ANDROID_TYPES = {
    0: ("text", None), 1: ("media", IMAGE), 2: ("media", AUDIO), 3: ("media", VIDEO), 4: ("media", CONTACT),
    5: ("media", MEDIA), 7: ("system", None), 8: ("system", None), 9: ("media", DOCUMENT), 10: ("system", None),
    11: ("system", None), 13: ("media", GIF), 14: ("media", CONTACT), 15: ("deleted", None), 16: ("media", MEDIA),
    20: ("media", STICKER), 36: ("system", None), 42: ("media", IMAGE), 43: ("media", VIDEO),
    64: ("deleted", None), 66: ("poll", None), 82: ("media", AUDIO), 90: ("system", None), 99: _ALBUM,
    106: ("poll", None), 112: ("system", None), 116: ("hidden", "a row the app does not show"),
}
# iOS ZMESSAGETYPE → (kind, placeholder); the numbers are not Android's (iOS 46 is a poll, 66 an album)
_IOS_TYPES = {
    0: ("text", None), 1: ("media", IMAGE), 2: ("media", VIDEO), 3: ("media", AUDIO), 4: ("media", CONTACT),
    5: ("media", MEDIA), 6: ("system", None), 7: ("text", None), 8: ("media", DOCUMENT), 10: ("system", None),
    11: ("media", GIF), 12: ("system", None), 14: ("deleted", None), 15: ("media", STICKER), 25: ("text", None),
    28: ("system", None), 31: ("text", None), 34: ("text", None), 38: ("media", IMAGE), 39: ("media", VIDEO),
    46: ("poll", None), 53: ("media", AUDIO), 54: ("media", VIDEO_NOTE), 55: ("system", None),
    59: ("system", None), 66: _ALBUM,
}
# Android message_system.action_type → what happened (a short readable line)
_ANDROID_ACTIONS = {
    1: "changed the group name", 4: "joined", 5: "left", 6: "changed the group icon", 7: "was removed",
    11: "created the group", 12: "added a member", 14: "removed a member", 15: "is now an admin",
    18: "security code changed", 20: "joined using an invite link", 27: "changed the group description",
    58: "blocked this contact",
}
_IOS_GROUP_EVENTS = {
    1: "changed the group name", 2: "joined", 3: "left", 4: "changed the group icon", 5: "deleted the group icon",
    7: "was removed", 10: "is now an admin", 12: "created the group",
}
# iOS ZMESSAGETYPE 10 (calls and notices) has its own ZGROUPEVENTTYPE numbers; 2 is the encryption notice
_IOS_NOTICES = {
    1: "called (missed voice call)", 3: "security code changed", 4: "called (missed video call)",
    5: "changed their phone number", 6: "changed their phone number", 21: "called (missed voice call)",
    22: "called (missed video call)", 34: "blocked this contact", 35: "unblocked this contact",
    36: "security code changed", 40: "started a video call", 41: "started a video call",
    45: "called (missed voice call)", 46: "called (missed video call)",
}
_ENCRYPTED = "Messages and calls are end-to-end encrypted."


def read_whatsapp_database(
    path: str | os.PathLike,
    skips: SkipCounter | None = None,
    me: str = "me",
    *,
    tz: tzinfo | str | None = None,
    contacts_db: str | os.PathLike | None = None,
) -> list[WhatsAppChat]:
    """Every chat of a decrypted `msgstore.db` (current or legacy schema) or an iOS `ChatStorage.sqlite`.

    `me` names the phone's owner; `tz` is the zone timestamps are written in (default UTC); `contacts_db`, an
    optional Android `wa.db`, gives contacts' names. Chats come in the database's chat order, each with its
    messages in time order; `chat_id` derives from the file's sha256 and the chat's jid. Raises InputFileError,
    naming the file, for an encrypted backup, a file that is not SQLite, or SQLite without WhatsApp's tables.
    """
    path = Path(path)
    skips = skips if skips is not None else SkipCounter()
    zone = resolve_tz(tz)
    _check_sqlite(path)
    digest = file_sha256(path)
    names = _contact_names(Path(contacts_db)) if contacts_db is not None else {}
    with _read_only(path) as db:
        flavour = ""
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            if "ZWAMESSAGE" in tables and "ZWACHATSESSION" in tables:
                reader, flavour = _IosReader(db, tables, me, zone, names), "ios"
            elif {"message", "chat", "jid"} <= tables and (
                "messages" not in tables or db.execute("SELECT EXISTS(SELECT 1 FROM message)").fetchone()[0]
            ):
                reader, flavour = _AndroidReader(db, tables, me, zone, names), "android"
            elif "messages" in tables and "key_remote_jid" in _columns(db, "messages"):
                reader, flavour = _LegacyAndroidReader(db, tables, me, zone, names), "android-legacy"
            else:
                raise InputFileError(
                    f"{path}: an SQLite database without WhatsApp's message tables (expected message/chat/jid of "
                    "msgstore.db, the older messages table, or ZWAMESSAGE of iOS ChatStorage.sqlite)"
                )
            return reader.chats(path, digest, skips, flavour)
        except sqlite3.DatabaseError as e:
            what = f"{flavour} WhatsApp database" if flavour else "SQLite database"
            raise InputFileError(f"{path}: cannot read the {what} ({e})") from None


def looks_like_whatsapp_database(path: str | os.PathLike) -> bool:
    """Cheap sniff for input-kind detection: an SQLite file (any name), or an encrypted `.cryptNN` backup."""
    path = Path(path)
    if path.suffix.lower().startswith(".crypt"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def is_contacts_database(path: str | os.PathLike) -> bool:
    """Whether `path` is an Android `wa.db` (contacts: `wa_contacts`, no message table), which names the people of
    a `msgstore.db` (the one beside it, or one it is named for) and holds no message of its own."""
    return contacts_database_problem(path) is None


def contacts_database_problem(path: str | os.PathLike) -> str | None:
    """What keeps `path` from being an Android `wa.db`, in a few words for a one-line error; None when it is one."""
    path = Path(path)
    if path.is_dir():
        return "is a folder, not a wa.db file"
    if not path.is_file():
        return "does not exist"
    if path.suffix.lower().startswith(".crypt"):
        return "is an encrypted backup; decrypt it to wa.db first"
    if not looks_like_whatsapp_database(path):
        return "is not an SQLite database (expected WhatsApp's wa.db)"
    tables = _tables(path)
    if tables is None:
        return "cannot be read as an SQLite database"
    if tables & {"message", "messages", "ZWAMESSAGE"}:
        return "holds messages (a msgstore.db or ChatStorage.sqlite), not the wa.db of their contacts"
    if "wa_contacts" not in tables:
        return "is an SQLite database without wa.db's wa_contacts table"
    return None


def is_android_database(path: str | os.PathLike) -> bool:
    """Whether `path` is an Android `msgstore.db` (current or legacy schema): the database a `wa.db` names."""
    path = Path(path)
    if path.suffix.lower().startswith(".crypt") or not looks_like_whatsapp_database(path):
        return False
    tables = _tables(path) or set()
    return bool(tables & {"message", "messages"}) and "ZWAMESSAGE" not in tables


def _tables(path: Path) -> set[str] | None:
    """The names of an SQLite file's tables and views; None when it cannot be opened."""
    try:
        with _read_only(path) as db:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    except (sqlite3.DatabaseError, InputFileError, OSError):
        return None


def contacts_database_beside(path: str | os.PathLike) -> Path | None:
    """The `wa.db` in the folder of a `msgstore.db` (the two sit side by side in WhatsApp's `databases/` folder, and
    a copy of that folder keeps them so), else None."""
    path = Path(path)
    for sibling in (path.parent / "wa.db", path.parent / "WA.db", path.parent / "WA.DB"):
        if sibling != path and sibling.is_file() and is_contacts_database(sibling):
            return sibling
    return None


def database_sha256(path: str | os.PathLike, contacts_db: str | os.PathLike | None = None) -> str:
    """What a database's chats depend on: the file, and the `wa.db` whose names they take (`contacts_db`, wherever
    it lies, else the one beside it)."""
    path = Path(path)
    contacts = contacts_db if contacts_db is not None else contacts_database_beside(path)
    if contacts is None:
        return file_sha256(path)
    return hashlib.sha256(f"{file_sha256(path)}:{file_sha256(Path(contacts))}".encode()).hexdigest()


def _check_sqlite(path: Path) -> None:
    head = read_head(path, 100, "msgstore.db or ChatStorage.sqlite")
    if head[:16] == SQLITE_MAGIC:
        _check_complete(path, head)
        return
    if path.suffix.lower().startswith(".crypt"):
        raise InputFileError(
            f"{path}: an encrypted WhatsApp backup ({path.suffix}); decrypt it to msgstore.db first (it needs the "
            "backup's key, e.g. with wa-crypt-tools) and give that file"
        )
    raise InputFileError(f"{path}: not an SQLite database, expected a decrypted msgstore.db or ChatStorage.sqlite")


def _check_complete(path: Path, head: bytes) -> None:
    """A file shorter than its header says is a truncated copy: SQLite would read the missing pages as empty
    and silently lose the messages on them."""
    if len(head) < 100:
        raise InputFileError(f"{path}: a truncated SQLite file ({len(head)} bytes); copy the database again")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if head[24:28] != head[92:96] or not pages:  # the page count is only kept by SQLite ≥ 3.7.0
        return
    size = path.stat().st_size
    if size < pages * page_size:
        raise InputFileError(
            f"{path}: a truncated SQLite file ({size:,} bytes, its header says {pages * page_size:,}); copy the "
            "database again"
        )


@contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """The database opened without writing anything beside it. SQLite's `mode=ro` alone still creates `-wal` and
    `-shm` files next to a WAL-mode database (iOS's ChatStorage.sqlite, Android's wa.db) and writes to an
    existing `-shm`. Without a `-wal`, the file is the whole database and is read as immutable (no locks, no
    side files); with one, the two are copied to a temporary folder and read there, so that the newest messages,
    still in the `-wal`, are read too."""
    wal = path.with_name(path.name + "-wal")
    with tempfile.TemporaryDirectory(prefix="whatsapp-db-") as tmp:
        if wal.is_file() and wal.stat().st_size > 0:
            copy = Path(tmp) / "db.sqlite"
            try:
                shutil.copyfile(path, copy)
                shutil.copyfile(wal, Path(tmp) / "db.sqlite-wal")
            except OSError as e:
                raise InputFileError(f"{path}: cannot copy the database and its -wal to read them ({e})") from None
            uri = f"file:{quote(str(copy))}?mode=ro"
        else:
            uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
        try:
            db = sqlite3.connect(uri, uri=True)
        except sqlite3.DatabaseError as e:
            raise InputFileError(f"{path}: cannot open the SQLite database read-only ({e})") from None
        try:
            db.text_factory = _text
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as e:
            db.close()
            raise InputFileError(f"{path}: cannot open the SQLite database read-only ({e})") from None
        try:
            yield db
        finally:
            db.close()


def _text(raw: bytes) -> str | bytes:
    """SQLite text as str; bytes that are not UTF-8 stay bytes (a damaged row), for the reader to skip and count
    instead of the whole file failing on one row."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _contact_names(path: Path) -> dict[str, str]:
    """jid → display name from an Android `wa.db` (`wa_contacts(jid, display_name, wa_name)`)."""
    _check_sqlite(path)
    with _read_only(path) as db:
        try:
            rows = db.execute("SELECT jid, COALESCE(NULLIF(display_name, ''), NULLIF(wa_name, '')) FROM wa_contacts")
            return {jid: name for jid, name in rows if isinstance(jid, str) and isinstance(name, str) and name}
        except sqlite3.DatabaseError as e:
            raise InputFileError(f"{path}: not a WhatsApp wa.db (no wa_contacts table: {e})") from None


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}


def _column(cols: set[str], alias: str, name: str) -> str:
    """`alias.name` where the table has the column, else NULL: optional columns older versions do not have."""
    return f"{alias}.{name}" if name in cols else "NULL"


def _label(value: object) -> str | None:
    """A jid, id or name as str (bytes of a damaged row decoded with replacement characters)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _person(jid: str | None) -> str | None:
    """A jid without its linked-device part: `33600000001:5@s.whatsapp.net` is `33600000001@s.whatsapp.net`."""
    if not jid:
        return jid
    user, at, server = jid.partition("@")
    return f"{user.split(':', 1)[0]}{at}{server}"


def _user(jid: str | None) -> str | None:
    return _person(jid).split("@", 1)[0] if jid else None


def _epoch_time(seconds: object, zone: tzinfo, latest: float) -> datetime | None:
    """A Unix time as local time, or None where it is no time a WhatsApp message was sent: NULL, text, NaN,
    before 2009 (WhatsApp did not exist), after `latest` (the database is read before then), beyond year 9999."""
    if not isinstance(seconds, (int, float)) or math.isnan(seconds) or not WHATSAPP_FIRST_DAY <= seconds <= latest:
        return None
    try:
        return local_time(seconds, zone)
    except (ValueError, OverflowError, OSError):
        return None


def _milliseconds_per_unit(db: sqlite3.Connection, table: str) -> int:
    """1000 where `table.timestamp` is in milliseconds, as WhatsApp writes it; 1 where most of its numbers are
    Unix seconds, as some other tools write it. One unit for the whole column (a tool writes all its rows one
    way): a stray value in the other unit lands in 1970 or thousands of years ahead, and is counted, not read."""
    seconds, millis = db.execute(
        f"SELECT COALESCE(SUM(timestamp >= {_SECONDS[0]} AND timestamp < {_SECONDS[1]}), 0), "
        f"COALESCE(SUM(timestamp >= {_SECONDS[1]}), 0) FROM {table} WHERE typeof(timestamp) IN ('integer', 'real')"
    ).fetchone()
    if seconds > millis:
        log.info("%s.timestamp holds seconds, not milliseconds (%d rows of %d): read as seconds", table, seconds,
                 seconds + millis)
        return 1
    return 1000


def _not_a_conversation(jid: str | None) -> str | None:
    """The skip reason for every message of a chat that is no conversation, else None.

    `status@broadcast` holds Status posts. `<id>@broadcast` is a broadcast list: the phone stores a message sent
    to one both in the list's chat and, with the same key id, in each recipient's own chat (WhatsApp updates all
    the copies at once: `UPDATE message … WHERE chat_row_id IN (<list>, <recipients>…) AND from_me = 1 AND
    key_id = ?`). Replies come back in those own chats, so the list's chat is the owner's side only, a second
    time: read as a chat it would count every broadcast twice and make the list a conversation partner. Someone
    fine-tuning on their conversations wants each broadcast once, in the chat where its recipient answered it:
    the list's chat is skipped and its messages counted.

    iOS keeps a list as a ZWACHATSESSION row whose ZCONTACTJID is `<id>@broadcast` (ZSESSIONTYPE 2: amberkeep's
    docs/formats/ios.md §5, one such row on a real phone). Whether iOS also stores each broadcast in the
    recipients' own sessions, as Android does, no public source found says: the same skip applies to it unverified.
    """
    if jid in _STATUS_JIDS or (jid or "").partition("@")[2] in _STATUS_SERVERS:
        return "whatsapp_db_status_update"
    if jid and jid.endswith("@broadcast"):
        return "whatsapp_db_broadcast_list"
    return None


class _Reader:
    """What the three schemas share: chats built from (chat key, name, jid) and each row's message."""

    def __init__(self, db, tables: set[str], me: str, zone: tzinfo, names: dict[str, str]) -> None:
        self.db, self.tables, self.me, self.zone, self.names = db, tables, me, zone, names
        self.unknown_types: dict[object, Counter] = defaultdict(Counter)
        self.person: dict[object, str | None] = {}  # chat key → the jid of the person (a phone jid behind @lid)
        self.chosen_names: dict[str, str] = {}  # jid → the name its person chose (Android: unmapped @lid)
        self.latest = time.time() + _CLOCK_SLACK  # no message in the copy was sent after this

    def chats(self, path: Path, digest: str, skips: SkipCounter, flavour: str) -> list[WhatsAppChat]:
        chats_info = self.chat_rows()
        records: dict[object, list[SourceMessage]] = {key: [] for key, _, _ in chats_info}
        chat_skips = {key: ChatSkips(skips, f"{path}:{jid}") for key, _, jid in chats_info}
        orphans = ChatSkips(skips, str(path))
        group_of = {key: (jid or "").endswith("@g.us") for key, _, jid in chats_info}
        jid_of = {key: jid for key, _, jid in chats_info}
        skipped_as = {key: _not_a_conversation(jid) for key, _, jid in chats_info}
        previous = None
        for row in self.message_rows():
            key = row[0]
            if key not in records:
                orphans.skip("whatsapp_db_message_without_chat", row[1])
                continue
            if (key, row[1]) == previous:  # a side table with two rows for one message: the message once
                chat_skips[key].skip("whatsapp_db_duplicate_row", row[1])
                continue
            previous = (key, row[1])
            if skipped_as[key]:
                chat_skips[key].skip(skipped_as[key], row[1])
                continue
            person = self.person.get(key, jid_of[key])
            record = self.message(row, group_of[key], person, chat_skips[key])
            if record is not None:
                records[key].append(record)
        out = []
        for key, name, jid in chats_info:
            if skipped_as[key]:
                continue
            person = _person(self.person.get(key, jid))
            out.append(
                build_chat(
                    records[key],
                    chat_id=chat_id_for(digest, jid or key),
                    path=path,
                    source=f"whatsapp-db-{flavour}",
                    name=name or self.known_name(person),
                    skipped=dict(chat_skips[key].counts),
                    extra={
                        "chat_jid": jid,
                        "group": group_of[key],
                        "unknown_types": {str(t): n for t, n in self.unknown_types[key].items()},
                    },
                )
            )
        return out

    def author(self, from_me: bool, jid: str | None, known: str | None = None) -> str:
        """`me`, else the name the database holds, the wa.db name, the name the person chose, the phone number;
        "unknown" without a jid (a group message whose sender row is gone: the group's own number is nobody)."""
        if from_me:
            return self.me
        return known or self.known_name(_person(jid)) or "unknown"

    def known_name(self, jid: str | None) -> str | None:
        """What the reader calls a person (or a chat without a name of its own) when the database names nobody:
        the wa.db name, else the name they chose, else their number. One order for authors and chats, so a chat
        whose messages wa.db signs "Priya" is called "Priya" too, not by her number."""
        return self.names.get(jid or "") or self.chosen_names.get(jid or "") or _user(jid)

    def sent_at(self, seconds: object, raw: object, row_id: object, skips: ChatSkips) -> datetime | None:
        """A message's Unix time as local time; a time no WhatsApp message has (see _epoch_time) is skipped,
        counted: kept, a January 1970 message would teach the model a date that never was."""
        timestamp = _epoch_time(seconds, self.zone, self.latest)
        if timestamp is None:
            skips.skip("whatsapp_db_bad_timestamp", row_id, repr(raw))
        return timestamp

    def typed(self, table: dict, type_code, key) -> tuple[str, str | None]:
        found = table.get(type_code)
        if found is None:
            self.unknown_types[key][type_code] += 1
            return "media", MEDIA
        return found


class _AndroidReader(_Reader):
    def chat_rows(self) -> list[tuple]:
        # LEFT JOIN: a chat whose jid row is gone keeps its messages; an @lid chat's person is its phone jid
        person, person_join = "jid.raw_string", ""
        if "jid_map" in self.tables:
            person = "COALESCE(mapped.raw_string, jid.raw_string)"
            person_join = (
                "LEFT JOIN jid_map jm ON jm.lid_row_id = chat.jid_row_id LEFT JOIN jid mapped ON mapped._id = jm.jid_row_id"
            )
        rows = []
        for key, subject, jid, person_jid in self.db.execute(
            f"SELECT chat._id, chat.subject, jid.raw_string, {person} FROM chat "
            f"LEFT JOIN jid ON jid._id = chat.jid_row_id {person_join} ORDER BY chat._id"
        ):
            self.person[key] = _label(person_jid)
            rows.append((key, _label(subject), _label(jid)))
        self.chosen_names = self._lid_display_names()
        return rows

    def _lid_display_names(self) -> dict[str, str]:
        """`@lid` jid → the display name its person chose (`lid_display_name`, newer databases), for the @lid
        people `jid_map` does not map to a phone jid. Left out where the table lacks the columns read."""
        if "lid_display_name" not in self.tables or not {"lid_row_id", "display_name"} <= _columns(
            self.db, "lid_display_name"
        ):
            return {}
        rows = self.db.execute(
            "SELECT jid.raw_string, d.display_name FROM lid_display_name d JOIN jid ON jid._id = d.lid_row_id"
        )
        names = {_person(_label(jid)): (_label(name) or "").strip() for jid, name in rows}
        return {jid: name for jid, name in names.items() if jid and name}

    def message_rows(self) -> Iterable[tuple]:
        cols = _columns(self.db, "message")
        forwarded = "(m.origination_flags & 1)" if "origination_flags" in cols else "0"
        quoted = "q.key_id" if "message_quoted" in self.tables else "NULL"
        quoted_join = "LEFT JOIN message_quoted q ON q.message_row_id = m._id" if quoted != "NULL" else ""
        action = "s.action_type" if "message_system" in self.tables else "NULL"
        action_join = "LEFT JOIN message_system s ON s.message_row_id = m._id" if action != "NULL" else ""
        # an edited message is one row with the final text; replies quote its original key id
        original = "e.original_key_id" if "message_edit_info" in self.tables else "NULL"
        edit_join = "LEFT JOIN message_edit_info e ON e.message_row_id = m._id" if original != "NULL" else ""
        if "jid_map" in self.tables:  # anonymous @lid senders mapped to their phone jid where known
            sender = "COALESCE(mapped.raw_string, sender.raw_string)"
            sender_join = (
                "LEFT JOIN jid_map jm ON jm.lid_row_id = m.sender_jid_row_id "
                "LEFT JOIN jid mapped ON mapped._id = jm.jid_row_id"
            )
        else:
            sender, sender_join = "sender.raw_string", ""
        self.polls = self._polls()
        self.unit = _milliseconds_per_unit(self.db, "message")
        return self.db.execute(
            f"SELECT m.chat_row_id, m._id, m.from_me, m.key_id, m.timestamp, m.text_data, m.message_type, "
            f"{sender}, {quoted}, {forwarded}, {action}, {original} FROM message m "
            f"LEFT JOIN jid sender ON sender._id = m.sender_jid_row_id {sender_join} {quoted_join} {action_join} "
            f"{edit_join} ORDER BY m.chat_row_id, m.timestamp, m._id"
        )

    def _polls(self) -> dict[int, list[tuple[str, int]]]:
        if "message_poll_option" not in self.tables:
            return {}
        polls: dict[int, list] = defaultdict(list)
        for row_id, name, votes in self.db.execute(
            "SELECT message_row_id, option_name, vote_total FROM message_poll_option ORDER BY _id"
        ):
            polls[row_id].append((_label(name) or "", votes or 0))
        return polls

    def message(self, row, group: bool, person: str | None, skips: ChatSkips) -> SourceMessage | None:
        key, row_id, from_me, key_id, stamp, text, type_code, sender, quoted, forwarded, action, original = row
        timestamp = self.sent_at(stamp / self.unit if isinstance(stamp, (int, float)) else None, stamp, row_id, skips)
        if timestamp is None:
            return None
        author = self.author(bool(from_me), _label(sender) if group else person)
        source_id = _label(original) or _label(key_id) or f"row-{row_id}"
        quoted = _label(quoted)
        if row_id in self.polls:
            options = "\n".join(f"OPTION: {n} ({v} vote{'' if v == 1 else 's'})" for n, v in self.polls[row_id])
            return SourceMessage(source_id, timestamp, author, f"POLL:\n{text or ''}\n{options}", "poll",
                                 quoted, bool(forwarded))
        kind, placeholder = self.typed(_ANDROID_TYPES, type_code, key)
        if kind == "text" and original is not None:
            kind = "edited"
        return _message(source_id, timestamp, author, text, kind, placeholder, quoted, bool(forwarded),
                        bool(from_me), _ANDROID_ACTIONS.get(action), row_id, skips)


class _LegacyAndroidReader(_Reader):
    def chat_rows(self) -> list[tuple]:
        subjects = {}
        if "chat_list" in self.tables and "subject" in _columns(self.db, "chat_list"):
            subjects = dict(self.db.execute("SELECT key_remote_jid, subject FROM chat_list"))
        jids = [r[0] for r in self.db.execute(
            "SELECT key_remote_jid FROM messages WHERE key_remote_jid IS NOT NULL AND key_remote_jid <> '-1' "
            "GROUP BY key_remote_jid ORDER BY MIN(_id)"
        )]
        return [(jid, _label(subjects.get(jid)), _label(jid)) for jid in jids]

    def message_rows(self) -> Iterable[tuple]:
        cols = _columns(self.db, "messages")
        if "quoted_row_id" in cols and "messages_quotes" in self.tables:
            quoted, join = "q.key_id", "LEFT JOIN messages_quotes q ON q._id = m.quoted_row_id AND m.quoted_row_id > 0"
        else:
            quoted, join = "NULL", ""
        optional = ", ".join(_column(cols, "m", c) for c in ("media_caption", "status", "edit_version"))
        self.unit = _milliseconds_per_unit(self.db, "messages")
        return self.db.execute(
            f"SELECT m.key_remote_jid, m._id, m.key_from_me, m.key_id, m.timestamp, m.data, m.media_wa_type, "
            f"{_column(cols, 'm', 'remote_resource')}, {quoted}, {optional} FROM messages m {join} "
            "WHERE m.key_remote_jid IS NOT NULL AND m.key_remote_jid <> '-1' ORDER BY m.key_remote_jid, m.timestamp, m._id"
        )

    def message(self, row, group: bool, person: str | None, skips: ChatSkips) -> SourceMessage | None:
        key, row_id, from_me, key_id, stamp, text, type_code, sender, quoted, caption, status, edit_version = row
        timestamp = self.sent_at(stamp / self.unit if isinstance(stamp, (int, float)) else None, stamp, row_id, skips)
        if timestamp is None:
            return None
        author = self.author(bool(from_me), _label(sender) if group else person)
        try:
            code = int(type_code or 0)
        except (TypeError, ValueError):
            code = type_code
        kind, placeholder = ("system", None) if status == 6 else self.typed(_ANDROID_TYPES, code, key)
        if edit_version == 7:  # revoked: the row stays, its text is gone
            kind = "deleted"
        if kind == "media" and caption:
            text = caption
        return _message(_label(key_id) or f"row-{row_id}", timestamp, author, text, kind, placeholder,
                        _label(quoted), False, bool(from_me), None, row_id, skips)


class _IosReader(_Reader):
    def chat_rows(self) -> list[tuple]:
        cols = _columns(self.db, "ZWACHATSESSION")
        name, jid = _column(cols, "s", "ZPARTNERNAME"), _column(cols, "s", "ZCONTACTJID")
        rows = self.db.execute(f"SELECT s.Z_PK, {name}, {jid} FROM ZWACHATSESSION s ORDER BY s.Z_PK")
        return [(key, _label(name), _label(jid)) for key, name, jid in rows]

    def message_rows(self) -> Iterable[tuple]:
        cols = _columns(self.db, "ZWAMESSAGE")
        flags = "(m.ZFLAGS & 128)" if "ZFLAGS" in cols else "0"
        order = "m.ZSORT, m.ZMESSAGEDATE, m.Z_PK" if "ZSORT" in cols else "m.ZMESSAGEDATE, m.Z_PK"
        member_cols = _columns(self.db, "ZWAGROUPMEMBER") if "ZWAGROUPMEMBER" in self.tables else set()
        names = [f"NULLIF(TRIM(g.{c}), '')" for c in ("ZCONTACTNAME", "ZFIRSTNAME") if c in member_cols]
        if "ZWAPROFILEPUSHNAME" in self.tables and {"ZJID", "ZPUSHNAME"} <= _columns(self.db, "ZWAPROFILEPUSHNAME"):
            names.append("(SELECT NULLIF(TRIM(p.ZPUSHNAME), '') FROM ZWAPROFILEPUSHNAME p WHERE p.ZJID = g.ZMEMBERJID)")
        member_name = f"COALESCE({', '.join(names)})" if names else "NULL"
        if "ZMEMBERJID" in member_cols and "ZGROUPMEMBER" in cols:
            member, member_join = "g.ZMEMBERJID", "LEFT JOIN ZWAGROUPMEMBER g ON g.Z_PK = m.ZGROUPMEMBER"
        else:
            member, member_join, member_name = "NULL", "", "NULL"
        media_cols = _columns(self.db, "ZWAMEDIAITEM") if "ZWAMEDIAITEM" in self.tables else set()
        if "ZMESSAGE" in media_cols:
            metadata, caption = _column(media_cols, "mi", "ZMETADATA"), _column(media_cols, "mi", "ZTITLE")
            media_join = "LEFT JOIN ZWAMEDIAITEM mi ON mi.ZMESSAGE = m.Z_PK"
        else:
            metadata, caption, media_join = "NULL", "NULL", ""
        optional = ", ".join(
            _column(cols, "m", c) for c in ("ZISFROMME", "ZSTANZAID", "ZMESSAGEDATE", "ZTEXT", "ZMESSAGETYPE", "ZFROMJID")
        )
        return self.db.execute(
            f"SELECT m.ZCHATSESSION, m.Z_PK, {optional}, {member}, {member_name}, {metadata}, {caption}, {flags}, "
            f"{_column(cols, 'm', 'ZGROUPEVENTTYPE')} FROM ZWAMESSAGE m {member_join} {media_join} "
            f"ORDER BY m.ZCHATSESSION, {order}"
        )

    def chats(self, path: Path, digest: str, skips: SkipCounter, flavour: str) -> list[WhatsAppChat]:
        self.partner = {key: name for key, name, _ in self.chat_rows()}
        return super().chats(path, digest, skips, flavour)

    def message(self, row, group: bool, person: str | None, skips: ChatSkips) -> SourceMessage | None:
        (key, row_id, from_me, stanza, stamp, text, type_code, from_jid, member, member_name, metadata, caption,
         forwarded, event) = row
        timestamp = self.sent_at(stamp + APPLE_EPOCH if isinstance(stamp, (int, float)) else None, stamp, row_id, skips)
        if timestamp is None:
            return None
        if group:
            author = self.author(bool(from_me), _label(member), _label(member_name))
        else:
            partner = (self.partner.get(key) or "").strip() or None
            author = self.author(bool(from_me), person or _label(from_jid), partner)
        kind, placeholder = self.typed(_IOS_TYPES, type_code, key)
        if kind == "media" and caption and not text:
            text = caption
        what = None
        if type_code == 10:
            what = _ENCRYPTED if event == 2 else _IOS_NOTICES.get(event)
        elif kind == "system":
            what = _IOS_GROUP_EVENTS.get(event)
        return _message(_label(stanza) or f"row-{row_id}", timestamp, author, text, kind, placeholder,
                        _quoted_stanza(metadata), bool(forwarded), bool(from_me), what, row_id, skips)


def _quoted_stanza(metadata: object) -> str | None:
    """The quoted message's stanza id at the start of ZWAMEDIAITEM.ZMETADATA (protobuf field 5, bytes)."""
    if not isinstance(metadata, bytes) or len(metadata) < 3 or metadata[0] != 0x2A:
        return None
    length, pos, shift = 0, 1, 0
    while pos < len(metadata):  # varint length
        byte = metadata[pos]
        length |= (byte & 0x7F) << shift
        pos += 1
        shift += 7
        if not byte & 0x80:
            break
    raw = metadata[pos : pos + length]
    if len(raw) != length or not length:
        return None
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return None


def _message(
    source_id: str,
    timestamp,
    author: str,
    text: object,
    kind: str,
    placeholder: str | None,
    quoted: str | None,
    forwarded: bool,
    from_me: bool,
    what: str | None,
    row_id: object,
    skips: ChatSkips,
) -> SourceMessage | None:
    if isinstance(text, bytes):  # text that is not UTF-8 (see _text): a damaged row
        if kind in ("text", "edited", "poll"):
            skips.skip("whatsapp_db_binary_text", row_id, f"{len(text)} bytes")
            return None
        text = ""
    text = "" if text is None else str(text)
    if kind == "hidden":
        skips.skip("whatsapp_db_not_a_message", row_id, placeholder or "")
        return None
    if kind == "system":
        line = what or text.strip() or "system event"
        line = line if line == _ENCRYPTED or not what else f"{author} {what}"
        return SourceMessage(source_id, timestamp, None, line, "system", forwarded=forwarded)
    if kind == "deleted":
        line = "You deleted this message" if from_me else "This message was deleted"
        return SourceMessage(source_id, timestamp, author, line, "deleted", quoted, forwarded)
    if kind == "media":
        body = f"{placeholder}\n{text}" if text.strip() else placeholder
        return SourceMessage(source_id, timestamp, author, body or MEDIA, "media", quoted, forwarded)
    if kind == "poll":  # a poll whose options the database does not hold
        return SourceMessage(source_id, timestamp, author, f"POLL:\n{text}", "poll", quoted, forwarded)
    if not text.strip():
        skips.skip("whatsapp_db_empty_message", row_id, "a text message without text")
        return None
    return SourceMessage(source_id, timestamp, author, text, kind, quoted, forwarded)
