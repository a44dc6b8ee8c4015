"""WhatsApp "Export chat" files (`.txt`, or `.zip` with media) → chat messages and conversation documents.

`parse_whatsapp_export` reads one export into `ChatMessage` rows (storage.schemas.MESSAGE_SCHEMA);
`chat_to_documents` turns a parsed chat into one `Document` per conversation session. The localised phrases
(media placeholders, deleted/edited markers, system events) live in `tasks.whatsapp.phrases`.
"""

from tasks.whatsapp.classify import normalize_author
from tasks.whatsapp.documents import AuthorPseudonyms, chat_to_documents, pseudonym, split_sessions
from tasks.whatsapp.parser import (
    ChatMessage,
    NotAnExportError,
    WhatsAppChat,
    looks_like_whatsapp,
    parse_whatsapp_export,
)

__all__ = [
    "AuthorPseudonyms",
    "ChatMessage",
    "NotAnExportError",
    "WhatsAppChat",
    "chat_to_documents",
    "looks_like_whatsapp",
    "normalize_author",
    "parse_whatsapp_export",
    "pseudonym",
    "split_sessions",
]
