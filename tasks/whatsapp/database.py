"""Reading WhatsApp's own message databases into chats like the `.txt` parser's: Android's `msgstore.db`
(decrypted) and iOS's `ChatStorage.sqlite` (from a backup). One database holds every chat of the phone: the
reader returns one chat per chat row, with no 40,000-message cap, exact timestamps and quoted replies.

Schemas read (column names checked against open parsers: WhatsApp-Chat-Exporter's android_handler.py and
ios_handler.py, IPED's ExtractorAndroidNew.java and ExtractorIOS.java; nothing copied):

- Android, current (2021 on): `message(_id, chat_row_id, from_me, key_id, sender_jid_row_id, timestamp` in ms,
  `text_data, message_type)`, `chat(_id, jid_row_id, subject)`, `jid(_id, user, server, raw_string)`; optional:
  `message_quoted(message_row_id, key_id)` for replies, `message.origination_flags` (bit 1: forwarded),
  `message_system(message_row_id, action_type)`, `message_poll_option(message_row_id, option_name, vote_total)`,
  `jid_map(lid_row_id, jid_row_id)` (anonymous `@lid` members → their phone jid).
  `message_type`: 0 text, 1 image, 2 audio, 3 video, 4 contact, 5 location, 7 system, 8/10 call, 9 document,
  13 GIF, 15 deleted, 16 live location, 20 sticker, 64 deleted by an admin; others are kept as media and
  counted in `stats["unknown_types"]`.
- Android, legacy (before 2021): `messages(_id, key_remote_jid, key_from_me, key_id, status, data, timestamp`
  in ms, `media_wa_type, remote_resource)`; optional `media_caption`, `quoted_row_id` → `messages_quotes(_id,
  key_id)`, `chat_list(key_remote_jid, subject)`. `status` 6 is a system event; `media_wa_type` as above.
- iOS: `ZWAMESSAGE(Z_PK, ZCHATSESSION, ZISFROMME, ZTEXT, ZMESSAGEDATE` in seconds since 2001-01-01 UTC,
  `ZMESSAGETYPE, ZFROMJID, ZGROUPMEMBER, ZSTANZAID)`, optional `ZFLAGS` (bit 7: forwarded), `ZGROUPEVENTTYPE`,
  `ZSORT`; `ZWACHATSESSION(Z_PK, ZCONTACTJID, ZPARTNERNAME)`; `ZWAGROUPMEMBER(Z_PK, ZMEMBERJID, ZCONTACTNAME)`
  (ZCONTACTNAME is often empty; then `ZFIRSTNAME`, then `ZWAPROFILEPUSHNAME(ZJID, ZPUSHNAME)`); replies from
  `ZWAMEDIAITEM(ZMESSAGE, ZTITLE, ZMETADATA)`, whose ZMETADATA protobuf starts with field 5 = the quoted
  stanza id. `ZMESSAGETYPE`: 0 text, 1 image, 2 video, 3 audio, 4 contact, 5 location, 6 group event,
  7 text with a link, 8 document, 10 call or security event, 11 GIF, 12 system, 14 deleted, 15 sticker.

Authors: the phone's owner (`from_me`) is `me`; others are the name the database holds (iOS: partner or member
name; Android: none, `msgstore.db` has no names — pass `contacts_db` for a `wa.db`) else the jid's user part
(the phone number). Timestamps are UTC epochs written as naive local time in `tz` (default UTC: pass the
phone's zone, e.g. "Europe/Paris", to match a `.txt` export of the same chat; `merge_chats` also finds a whole
offset by itself). Status broadcasts (`status@broadcast`) are not chats and are skipped, counted.

The database is opened read-only (`mode=ro`), never written. An encrypted backup (`.crypt12/14/15`) or any
other non-SQLite file is refused with a one-line InputFileError.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from contextlib import closing
from datetime import tzinfo
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
_STATUS_JIDS = ("status@broadcast",)

# Android message_type / media_wa_type → (kind, placeholder)
_ANDROID_TYPES = {
    0: ("text", None), 1: ("media", IMAGE), 2: ("media", AUDIO), 3: ("media", VIDEO), 4: ("media", CONTACT),
    5: ("media", MEDIA), 7: ("system", None), 8: ("system", None), 9: ("media", DOCUMENT), 10: ("system", None),
    13: ("media", GIF), 15: ("deleted", None), 16: ("media", MEDIA), 20: ("media", STICKER),
    64: ("deleted", None),
}
# iOS ZMESSAGETYPE → (kind, placeholder)
_IOS_TYPES = {
    0: ("text", None), 1: ("media", IMAGE), 2: ("media", VIDEO), 3: ("media", AUDIO), 4: ("media", CONTACT),
    5: ("media", MEDIA), 6: ("system", None), 7: ("text", None), 8: ("media", DOCUMENT), 10: ("system", None),
    11: ("media", GIF), 12: ("system", None), 14: ("deleted", None), 15: ("media", STICKER),
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
    with closing(_open_read_only(path)) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if "ZWAMESSAGE" in tables and "ZWACHATSESSION" in tables:
            reader = _IosReader(db, tables, me, zone, names)
            flavour = "ios"
        elif {"message", "chat", "jid"} <= tables and (
            "messages" not in tables or db.execute("SELECT EXISTS(SELECT 1 FROM message)").fetchone()[0]
        ):
            reader = _AndroidReader(db, tables, me, zone, names)
            flavour = "android"
        elif "messages" in tables:
            reader = _LegacyAndroidReader(db, tables, me, zone, names)
            flavour = "android-legacy"
        else:
            raise InputFileError(
                f"{path}: an SQLite database without WhatsApp's message tables (expected message/chat/jid of "
                "msgstore.db, the older messages table, or ZWAMESSAGE of iOS ChatStorage.sqlite)"
            )
        try:
            return reader.chats(path, digest, skips, flavour)
        except sqlite3.DatabaseError as e:
            raise InputFileError(f"{path}: cannot read the {flavour} WhatsApp database ({e})") from None


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


def _check_sqlite(path: Path) -> None:
    if read_head(path, 16, "msgstore.db or ChatStorage.sqlite") == SQLITE_MAGIC:
        return
    if path.suffix.lower().startswith(".crypt"):
        raise InputFileError(
            f"{path}: an encrypted WhatsApp backup ({path.suffix}); decrypt it to msgstore.db first (it needs the "
            "backup's key, e.g. with wa-crypt-tools) and give that file"
        )
    raise InputFileError(f"{path}: not an SQLite database, expected a decrypted msgstore.db or ChatStorage.sqlite")


def _open_read_only(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    db = None
    try:
        db = sqlite3.connect(uri, uri=True)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        if db is not None:
            db.close()
        raise InputFileError(f"{path}: cannot open the SQLite database read-only ({e})") from None
    return db


def _contact_names(path: Path) -> dict[str, str]:
    """jid → display name from an Android `wa.db` (`wa_contacts(jid, display_name, wa_name)`)."""
    _check_sqlite(path)
    with closing(_open_read_only(path)) as db:
        try:
            rows = db.execute("SELECT jid, COALESCE(NULLIF(display_name, ''), NULLIF(wa_name, '')) FROM wa_contacts")
            return {jid: name for jid, name in rows if jid and name}
        except sqlite3.DatabaseError as e:
            raise InputFileError(f"{path}: not a WhatsApp wa.db (no wa_contacts table: {e})") from None


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}


def _user(jid: str | None) -> str | None:
    return jid.split("@", 1)[0] if jid else None


class _Reader:
    """What the three schemas share: chats built from (chat key, name, jid) and each row's message."""

    def __init__(self, db, tables: set[str], me: str, zone: tzinfo, names: dict[str, str]) -> None:
        self.db, self.tables, self.me, self.zone, self.names = db, tables, me, zone, names
        self.unknown_types: dict[object, Counter] = defaultdict(Counter)

    def chats(self, path: Path, digest: str, skips: SkipCounter, flavour: str) -> list[WhatsAppChat]:
        chats_info = self.chat_rows()
        records: dict[object, list[SourceMessage]] = {key: [] for key, _, _ in chats_info}
        chat_skips = {key: ChatSkips(skips, f"{path}:{jid}") for key, _, jid in chats_info}
        orphans = ChatSkips(skips, str(path))
        group_of = {key: (jid or "").endswith("@g.us") for key, _, jid in chats_info}
        jid_of = {key: jid for key, _, jid in chats_info}
        for row in self.message_rows():
            key = row[0]
            if key not in records:
                orphans.skip("whatsapp_db_message_without_chat", row[1])
                continue
            if jid_of[key] in _STATUS_JIDS:
                chat_skips[key].skip("whatsapp_db_status_update", row[1])
                continue
            record = self.message(row, group_of[key], jid_of[key], chat_skips[key])
            if record is not None:
                records[key].append(record)
        out = []
        for key, name, jid in chats_info:
            if jid in _STATUS_JIDS:
                continue
            out.append(
                build_chat(
                    records[key],
                    chat_id=chat_id_for(digest, jid or key),
                    path=path,
                    source=f"whatsapp-db-{flavour}",
                    name=name or _user(jid),
                    skipped=dict(chat_skips[key].counts),
                    extra={
                        "chat_jid": jid,
                        "group": group_of[key],
                        "unknown_types": {str(t): n for t, n in self.unknown_types[key].items()},
                    },
                )
            )
        return out

    def author(self, from_me: bool, sender_jid: str | None, chat_jid: str | None, known: str | None = None) -> str:
        if from_me:
            return self.me
        jid = sender_jid or chat_jid
        return known or self.names.get(jid or "") or _user(jid) or "unknown"

    def typed(self, table: dict, type_code, key) -> tuple[str, str | None]:
        found = table.get(type_code)
        if found is None:
            self.unknown_types[key][type_code] += 1
            return "media", MEDIA
        return found


class _AndroidReader(_Reader):
    def chat_rows(self) -> list[tuple]:
        return list(
            self.db.execute(
                "SELECT chat._id, chat.subject, jid.raw_string FROM chat JOIN jid ON jid._id = chat.jid_row_id "
                "ORDER BY chat._id"
            )
        )

    def message_rows(self) -> Iterable[tuple]:
        cols = _columns(self.db, "message")
        forwarded = "(m.origination_flags & 1)" if "origination_flags" in cols else "0"
        quoted = "q.key_id" if "message_quoted" in self.tables else "NULL"
        quoted_join = "LEFT JOIN message_quoted q ON q.message_row_id = m._id" if quoted != "NULL" else ""
        action = "s.action_type" if "message_system" in self.tables else "NULL"
        action_join = "LEFT JOIN message_system s ON s.message_row_id = m._id" if action != "NULL" else ""
        if "jid_map" in self.tables:  # anonymous @lid senders mapped to their phone jid where known
            sender = "COALESCE(mapped.raw_string, sender.raw_string)"
            sender_join = (
                "LEFT JOIN jid_map jm ON jm.lid_row_id = m.sender_jid_row_id "
                "LEFT JOIN jid mapped ON mapped._id = jm.jid_row_id"
            )
        else:
            sender, sender_join = "sender.raw_string", ""
        self.polls = self._polls()
        return self.db.execute(
            f"SELECT m.chat_row_id, m._id, m.from_me, m.key_id, m.timestamp, m.text_data, m.message_type, "
            f"{sender}, {quoted}, {forwarded}, {action} FROM message m "
            f"LEFT JOIN jid sender ON sender._id = m.sender_jid_row_id {sender_join} {quoted_join} {action_join} "
            "ORDER BY m.chat_row_id, m.timestamp, m._id"
        )

    def _polls(self) -> dict[int, list[tuple[str, int]]]:
        if "message_poll_option" not in self.tables:
            return {}
        polls: dict[int, list] = defaultdict(list)
        for row_id, name, votes in self.db.execute(
            "SELECT message_row_id, option_name, vote_total FROM message_poll_option ORDER BY _id"
        ):
            polls[row_id].append((name or "", votes or 0))
        return polls

    def message(self, row, group: bool, chat_jid: str | None, skips: ChatSkips) -> SourceMessage | None:
        key, row_id, from_me, key_id, stamp, text, type_code, sender, quoted, forwarded, action = row
        if stamp is None or not isinstance(stamp, (int, float)) or stamp <= 0:
            skips.skip("whatsapp_db_bad_timestamp", row_id, repr(stamp))
            return None
        timestamp = local_time(stamp / 1000, self.zone)
        author = self.author(bool(from_me), sender if group else None, chat_jid)
        source_id = key_id or f"row-{row_id}"
        if row_id in self.polls:
            options = "\n".join(f"OPTION: {n} ({v} vote{'' if v == 1 else 's'})" for n, v in self.polls[row_id])
            return SourceMessage(source_id, timestamp, author, f"POLL:\n{text or ''}\n{options}", "poll",
                                 quoted, bool(forwarded))
        kind, placeholder = self.typed(_ANDROID_TYPES, type_code, key)
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
        return [(jid, subjects.get(jid), jid) for jid in jids]

    def message_rows(self) -> Iterable[tuple]:
        cols = _columns(self.db, "messages")
        caption = "m.media_caption" if "media_caption" in cols else "NULL"
        if "quoted_row_id" in cols and "messages_quotes" in self.tables:
            quoted, join = "q.key_id", "LEFT JOIN messages_quotes q ON q._id = m.quoted_row_id AND m.quoted_row_id > 0"
        else:
            quoted, join = "NULL", ""
        status = "m.status" if "status" in cols else "NULL"
        return self.db.execute(
            f"SELECT m.key_remote_jid, m._id, m.key_from_me, m.key_id, m.timestamp, m.data, m.media_wa_type, "
            f"m.remote_resource, {quoted}, {caption}, {status} FROM messages m {join} "
            "WHERE m.key_remote_jid IS NOT NULL AND m.key_remote_jid <> '-1' ORDER BY m.key_remote_jid, m.timestamp, m._id"
        )

    def message(self, row, group: bool, chat_jid: str | None, skips: ChatSkips) -> SourceMessage | None:
        key, row_id, from_me, key_id, stamp, text, type_code, sender, quoted, caption, status = row
        if stamp is None or not isinstance(stamp, (int, float)) or stamp <= 0:
            skips.skip("whatsapp_db_bad_timestamp", row_id, repr(stamp))
            return None
        timestamp = local_time(stamp / 1000, self.zone)
        author = self.author(bool(from_me), sender if group else None, chat_jid)
        try:
            code = int(type_code or 0)
        except (TypeError, ValueError):
            code = type_code
        kind, placeholder = ("system", None) if status == 6 else self.typed(_ANDROID_TYPES, code, key)
        if kind == "media" and caption:
            text = caption
        return _message(key_id or f"row-{row_id}", timestamp, author, text, kind, placeholder, quoted, False,
                        bool(from_me), None, row_id, skips)


class _IosReader(_Reader):
    def chat_rows(self) -> list[tuple]:
        return list(self.db.execute("SELECT Z_PK, ZPARTNERNAME, ZCONTACTJID FROM ZWACHATSESSION ORDER BY Z_PK"))

    def message_rows(self) -> Iterable[tuple]:
        cols = _columns(self.db, "ZWAMESSAGE")
        flags = "(m.ZFLAGS & 128)" if "ZFLAGS" in cols else "0"
        event = "m.ZGROUPEVENTTYPE" if "ZGROUPEVENTTYPE" in cols else "NULL"
        order = "m.ZSORT, m.ZMESSAGEDATE, m.Z_PK" if "ZSORT" in cols else "m.ZMESSAGEDATE, m.Z_PK"
        member_cols = _columns(self.db, "ZWAGROUPMEMBER") if "ZWAGROUPMEMBER" in self.tables else set()
        names = [f"NULLIF(TRIM(g.{c}), '')" for c in ("ZCONTACTNAME", "ZFIRSTNAME") if c in member_cols]
        if "ZWAPROFILEPUSHNAME" in self.tables:
            names.append("(SELECT NULLIF(TRIM(p.ZPUSHNAME), '') FROM ZWAPROFILEPUSHNAME p WHERE p.ZJID = g.ZMEMBERJID)")
        member_name = f"COALESCE({', '.join(names)})" if names else "NULL"
        if member_cols:
            member, member_join = "g.ZMEMBERJID", "LEFT JOIN ZWAGROUPMEMBER g ON g.Z_PK = m.ZGROUPMEMBER"
        else:
            member, member_join, member_name = "NULL", "", "NULL"
        media_cols = _columns(self.db, "ZWAMEDIAITEM") if "ZWAMEDIAITEM" in self.tables else set()
        metadata = "mi.ZMETADATA" if "ZMETADATA" in media_cols else "NULL"
        caption = "mi.ZTITLE" if "ZTITLE" in media_cols else "NULL"
        media_join = "LEFT JOIN ZWAMEDIAITEM mi ON mi.ZMESSAGE = m.Z_PK" if media_cols else ""
        if not media_cols:
            metadata = caption = "NULL"
        return self.db.execute(
            f"SELECT m.ZCHATSESSION, m.Z_PK, m.ZISFROMME, m.ZSTANZAID, m.ZMESSAGEDATE, m.ZTEXT, m.ZMESSAGETYPE, "
            f"m.ZFROMJID, {member}, {member_name}, {metadata}, {caption}, {flags}, {event} FROM ZWAMESSAGE m "
            f"{member_join} {media_join} ORDER BY m.ZCHATSESSION, {order}"
        )

    def chats(self, path: Path, digest: str, skips: SkipCounter, flavour: str) -> list[WhatsAppChat]:
        self.partner = {key: name for key, name, _ in self.chat_rows()}
        return super().chats(path, digest, skips, flavour)

    def message(self, row, group: bool, chat_jid: str | None, skips: ChatSkips) -> SourceMessage | None:
        (key, row_id, from_me, stanza, stamp, text, type_code, from_jid, member, member_name, metadata, caption,
         forwarded, event) = row
        if stamp is None or not isinstance(stamp, (int, float)):
            skips.skip("whatsapp_db_bad_timestamp", row_id, repr(stamp))
            return None
        timestamp = local_time(stamp + APPLE_EPOCH, self.zone)
        if group:
            author = self.author(bool(from_me), member, chat_jid, member_name)
        else:
            partner = (self.partner.get(key) or "").strip() or None
            author = self.author(bool(from_me), None, chat_jid or from_jid, partner)
        kind, placeholder = self.typed(_IOS_TYPES, type_code, key)
        if kind == "media" and caption and not text:
            text = caption
        what = None
        if kind == "system":
            if type_code == 10 and event == 2:
                what = _ENCRYPTED
            else:
                what = _IOS_GROUP_EVENTS.get(event)
        return _message(stanza or f"row-{row_id}", timestamp, author, text, kind, placeholder,
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
    if text is not None and not isinstance(text, str):
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                skips.skip("whatsapp_db_binary_text", row_id, f"{len(text)} bytes")
                return None
        else:
            text = str(text)
    text = text or ""
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
    if not text.strip():
        skips.skip("whatsapp_db_empty_message", row_id, "a text message without text")
        return None
    return SourceMessage(source_id, timestamp, author, text, "text", quoted, forwarded)
