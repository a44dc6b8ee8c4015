"""Text cleaning rules for the `clean` stage: each rule is a small function that can be switched off.

`clean_text` applies the enabled rules in a fixed order and reports which ones changed the text, so the stage can
put per-rule counts in its manifest. The phrases the rules look for (WhatsApp placeholders and system messages in
several languages, link top-level domains…) are data, kept together at the top of this module.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict

from tasks.whatsapp import phrases as whatsapp_phrases

# ---------------------------------------------------------------------------------------------------------------
# Phrase tables. Matching ignores case and accepts any run of spaces where a phrase has one.
# ---------------------------------------------------------------------------------------------------------------

# What WhatsApp writes instead of a photo, video, sticker… when a chat is exported without media. Android puts
# them between <…> (or ‹…›) anywhere in a message; iOS writes them bare, as the whole message.
MEDIA_OMITTED: dict[str, tuple[str, ...]] = {
    "en": ("Media omitted", "image omitted", "video omitted", "audio omitted", "sticker omitted", "GIF omitted",
           "document omitted", "Contact card omitted", "video note omitted", "View once message"),
    "fr": ("Médias omis", "Fichier omis", "image absente", "vidéo absente", "audio omis", "autocollant omis",
           "GIF retiré", "document omis", "Carte de contact omise"),
    "es": ("Multimedia omitido", "Archivo omitido", "imagen omitida", "video omitido", "audio omitido",
           "sticker omitido", "GIF omitido", "documento omitido", "Tarjeta de contacto omitida"),
    "pt": ("Mídia oculta", "Multimédia omitido", "Arquivo de mídia oculto", "imagem ocultada", "vídeo omitido",
           "áudio ocultado", "figurinha omitida", "documento omitido"),
    "de": ("Medien ausgeschlossen", "Medien weggelassen", "Bild weggelassen", "Video weggelassen",
           "Audio weggelassen", "Sticker weggelassen", "GIF weggelassen", "Dokument weggelassen"),
    "it": ("Media omessi", "immagine omessa", "video omesso", "audio omesso", "sticker omesso", "GIF omessa",
           "documento omesso"),
    "nl": ("Media weggelaten", "afbeelding weggelaten", "video weggelaten", "audio weggelaten",
           "sticker weggelaten", "GIF weggelaten", "document weggelaten"),
    "tr": ("Medya dahil edilmedi", "Medya atlandı", "görüntü dahil edilmedi", "video dahil edilmedi",
           "ses dahil edilmedi", "Çıkartma dahil edilmedi"),
    "ar": ("تم استبعاد الوسائط", "الوسائط محذوفة", "تم استبعاد الصورة", "تم استبعاد الفيديو",
           "تم استبعاد الصوت", "تم استبعاد الملصق"),
    "id": ("Media tidak disertakan", "gambar tidak disertakan", "video tidak disertakan",
           "audio tidak disertakan", "stiker tidak disertakan", "dokumen tidak disertakan"),
}

# iOS exports with media: `<attached: 00000012-PHOTO-2020-01-01-12-00-00.jpg>`.
ATTACHED_LABELS: dict[str, tuple[str, ...]] = {
    "en": ("attached",), "fr": ("pièce jointe", "joint"), "es": ("adjunto",), "pt": ("anexado", "anexo"),
    "de": ("Anhang", "angehängt"), "it": ("allegato",), "nl": ("bijgevoegd", "bijlage"), "tr": ("ek", "eklendi"),
    "ar": ("مرفق",), "id": ("terlampir", "lampiran"),
}

# Android exports with media: `IMG-20200101-WA0001.jpg (file attached)`.
FILE_ATTACHED: dict[str, tuple[str, ...]] = {
    "en": ("file attached",), "fr": ("fichier joint", "fichier attaché"), "es": ("archivo adjunto",),
    "pt": ("arquivo anexado", "ficheiro anexado"), "de": ("Datei angehängt",), "it": ("file allegato",),
    "nl": ("bestand bijgevoegd",), "tr": ("dosya ekli", "dosya eklendi"), "ar": ("ملف مرفق", "الملف مرفق"),
    "id": ("file terlampir",),
}

# A deleted message is replaced by one of these, as the whole message.
DELETED_MESSAGE: dict[str, tuple[str, ...]] = {
    "en": ("This message was deleted", "You deleted this message"),
    "fr": ("Ce message a été supprimé", "Vous avez supprimé ce message"),
    "es": ("Se eliminó este mensaje", "Eliminaste este mensaje", "Este mensaje fue eliminado"),
    "pt": ("Esta mensagem foi apagada", "Você apagou esta mensagem", "Apagaste esta mensagem", "Mensagem apagada"),
    "de": ("Diese Nachricht wurde gelöscht", "Du hast diese Nachricht gelöscht", "Sie haben diese Nachricht gelöscht"),
    "it": ("Questo messaggio è stato eliminato", "Hai eliminato questo messaggio"),
    "nl": ("Dit bericht is verwijderd", "Je hebt dit bericht verwijderd", "U heeft dit bericht verwijderd"),
    "tr": ("Bu mesaj silindi", "Bu mesajı sildiniz", "Bu mesajı sildin"),
    "ar": ("تم حذف هذه الرسالة", "لقد حذفت هذه الرسالة"),
    "id": ("Pesan ini telah dihapus", "Anda menghapus pesan ini"),
}

# An edited message ends with one of these between <…>.
EDITED_MESSAGE: dict[str, tuple[str, ...]] = {
    "en": ("This message was edited",), "fr": ("Ce message a été modifié",), "es": ("Se editó este mensaje",),
    "pt": ("Esta mensagem foi editada",), "de": ("Diese Nachricht wurde bearbeitet",),
    "it": ("Questo messaggio è stato modificato",), "nl": ("Dit bericht is bewerkt",),
    "tr": ("Bu mesaj düzenlendi",), "ar": ("تم تعديل هذه الرسالة",), "id": ("Pesan ini telah diedit",),
}

# End-to-end encryption notices: a line containing one is removed whole (iOS may put an author before it).
ENCRYPTION_NOTICES: tuple[str, ...] = (
    "Messages and calls are end-to-end encrypted",
    "Messages to this group are now secured with end-to-end encryption",
    "Messages to this chat and calls are now secured with end-to-end encryption",
    "Messages you send to this chat and calls are now secured with end-to-end encryption",
    "Messages you send to this group are now secured with end-to-end encryption",
    "Les messages et les appels sont chiffrés de bout en bout",
    "Les messages envoyés dans ce groupe sont désormais protégés avec le chiffrement de bout en bout",
    "Les messages que vous envoyez dans cette discussion et les appels sont désormais protégés avec le "
    "chiffrement de bout en bout",
    "Los mensajes y las llamadas están cifrados de extremo a extremo",
    "As mensagens e as chamadas são protegidas com a criptografia de ponta-a-ponta",
    "Nachrichten und Anrufe sind Ende-zu-Ende-verschlüsselt",
    "Nachrichten, die du in diesem Chat sendest, sowie Anrufe, sind jetzt mit Ende-zu-Ende-Verschlüsselung "
    "geschützt",
    "I messaggi e le chiamate sono crittografati end-to-end",
    "I messaggi inviati a questa chat e le chiamate sono ora protetti con la crittografia end-to-end",
    "Berichten en oproepen worden end-to-end versleuteld",
    "Mesajlar ve aramalar uçtan uca şifrelidir",
    "Pesan dan panggilan terenkripsi secara end-to-end",
    "الرسائل والمكالمات مشفرة تمامًا بين الطرفين",
)

# System events, as regular expressions that must fill the whole line (after an optional export timestamp).
# `{who}` is a participant (a capitalised name, a phone number, or You/Vous), `{names}` a list of them,
# `{quoted}` a quoted group name, `{ar_who}` a name in Arabic script (or a phone number). English and French in
# full; the common events (group created, added, left, removed, subject changed, joined by link, missed call) in
# Spanish, Portuguese, German, Italian, Dutch, Turkish, Indonesian and Arabic.
SYSTEM_EVENTS: tuple[str, ...] = (
    # English
    r"{who} created group {quoted}",
    r"{who} created this group",
    r"{who} added {names}",
    r"{who} (?:were|was) (?:added|removed)",
    r"{who} left",
    r"{who} removed {names}",
    r"{who} joined using this group's invite link",
    r"{who} changed (?:the subject|the group name) (?:from {quoted} )?to {quoted}",
    r"{who} (?:changed|deleted) (?:this group's icon|the group description)",
    r"{who} changed (?:their|your) phone number to a new number\..*",
    r"{who} changed to {names}",
    r"{who} changed (?:this group's |the group )?settings (?:so|to) .*",
    r"{who} turned (?:on|off) disappearing messages\..*",
    r"{who} pinned a message",
    r"{who} (?:is|are|'re) (?:now|no longer) an admin",
    r"Missed (?:group )?(?:voice|video) call",
    r"Your security code with .{1,80} changed\..*",
    r"Waiting for this message\..*",
    r"This chat is with a business account\..*",
    # French
    r"{who} (?:a|avez) créé (?:le groupe {quoted}|ce groupe)",
    r"{who} (?:a|avez) ajouté {names}",
    r"{who} (?:a|avez) été (?:ajouté|retiré)e?",
    r"{who} vous a (?:ajouté|retiré)e?",
    r"{who} (?:est|êtes) partie?",
    r"{who} (?:a|avez) quitté(?: le groupe)?",
    r"{who} (?:a|avez) retiré {names}",
    r"{who} (?:a|avez) rejoint (?:ce|le) groupe (?:via|avec|en utilisant) le lien d['’]invitation.*",
    r"{who} (?:a|avez) (?:modifié|changé) (?:le sujet|le nom du groupe) (?:de {quoted} )?(?:en|à|pour) {quoted}",
    r"{who} (?:a|avez) (?:modifié|changé|supprimé) (?:l['’]icône (?:de ce|du) groupe|la description du groupe)",
    r"{who} (?:a|avez) changé (?:de|son|votre) numéro.*",
    r"{who} (?:a|avez) (?:activé|désactivé) les messages éphémères.*",
    r"{who} (?:a|avez) épinglé un message",
    r"{who} (?:est|êtes) (?:maintenant|désormais|plus) (?:un )?admin(?:istrateur)?",
    r"Appel (?:vocal|vidéo) (?:de groupe )?manqué",
    r"Votre code de sécurité avec .{1,80} a changé\..*",
    r"En attente de ce message\..*",
    # Spanish
    r"{who} creó el grupo {quoted}",
    r"Creaste el grupo {quoted}",
    r"{who} (?:añadió a {names}|te añadió)",
    r"Añadiste a {names}",
    r"{who} salió(?: del grupo)?",
    r"Saliste(?: del grupo)?",
    r"{who} (?:eliminó a {names}|te eliminó)",
    r"{who} cambió el (?:asunto|nombre del grupo) (?:de {quoted} )?a {quoted}",
    r"{who} se unió (?:usando|con|mediante) el enlace de invitación(?: de este grupo)?",
    r"(?:Llamada(?: de voz)?|Videollamada) (?:de grupo )?perdida",
    # Portuguese
    r"{who} criou o grupo {quoted}",
    r"Você criou o grupo {quoted}",
    r"{who} adicionou (?:você|{names})",
    r"(?:{who}|Você) saiu(?: do grupo)?",
    r"{who} removeu (?:você|{names})",
    r"{who} (?:mudou|alterou) o (?:assunto|nome do grupo) (?:de {quoted} )?para {quoted}",
    r"{who} entrou usando o link de convite(?: deste grupo)?",
    r"Chamada de (?:voz|vídeo) perdida",
    # German
    r"{who} (?:hat|hast) (?:die )?Gruppe {quoted} erstellt",
    r"{who} (?:hat|hast) (?:dich|{names}) hinzugefügt",
    r"{who} (?:hat|hast) die Gruppe verlassen",
    r"{who} (?:hat|hast) (?:dich|{names}) entfernt",
    r"{who} (?:hat|hast) den (?:Betreff|Gruppennamen) (?:von {quoted} )?(?:zu|in) {quoted} geändert",
    r"{who} (?:ist|bist) (?:der Gruppe )?über den Einladungslink(?: dieser Gruppe)? beigetreten",
    r"Verpasster (?:Sprach|Video)anruf",
    # Italian
    r"{who} ha creato il gruppo {quoted}",
    r"Hai creato il gruppo {quoted}",
    r"{who} (?:ha aggiunto {names}|ti ha aggiunto)",
    r"(?:{who} è uscit[oa]|Sei uscit[oa])(?: dal gruppo)?",
    r"{who} ha abbandonato(?: il gruppo)?",
    r"{who} (?:ha rimosso {names}|ti ha rimosso)",
    r"{who} ha cambiato l['’]oggetto (?:da {quoted} )?(?:a|in) {quoted}",
    r"{who} si è unit[oa] tramite il link d['’]invito(?: di questo gruppo)?",
    r"(?:Chiamata vocale|Videochiamata) persa",
    # Dutch
    r"{who} (?:heeft|hebt) (?:de )?groep {quoted} aangemaakt",
    r"{who} (?:heeft|hebt) (?:je|u|{names}) toegevoegd",
    r"{who} (?:heeft|hebt) de groep verlaten",
    r"{who} is vertrokken",
    r"{who} (?:heeft|hebt) (?:je|u|{names}) verwijderd",
    r"{who} (?:heeft|hebt) het onderwerp (?:gewijzigd (?:van {quoted} )?(?:in|naar) {quoted}|gewijzigd)",
    r"{who} (?:is|bent) lid geworden via de uitnodigingslink(?: van deze groep)?",
    r"Gemiste (?:spraak|video-?)oproep",
    # Turkish
    r"{who} {quoted} grubunu oluşturdu",
    r"{who},? (?:seni|{names})(?: kişisini)? ekledi",
    r"{who} (?:gruptan )?ayrıldı",
    r"{who},? (?:seni|{names})(?: kişisini)? çıkardı",
    r"Cevapsız (?:sesli|görüntülü) arama",
    # Indonesian
    r"{who} membuat grup {quoted}",
    r"{who} menambahkan (?:Anda|{names})",
    r"{who} keluar",
    r"{who} mengeluarkan (?:Anda|{names})",
    r"{who} bergabung menggunakan tautan undangan grup ini",
    r"Panggilan (?:suara|video) tak terjawab",
    # Arabic
    r"أنشأ {ar_who} المجموعة {quoted}",
    r"أنشأت المجموعة {quoted}",
    r"أضاف {ar_who}",
    r"أضافك {ar_who}",
    r"غادرت?(?: المجموعة)? {ar_who}",
    r"غادرت المجموعة",
    r"أزال {ar_who}",
    r"أزالك {ar_who}",
    r"انضم {ar_who} باستخدام رابط الدعوة.*",
    r"مكالمة (?:صوتية|فيديو) فائتة",
)

# Capitalised pronouns that start ordinary sentences ("He left"), never a system line.
NOT_A_NAME: tuple[str, ...] = (
    "I", "He", "She", "It", "We", "They", "This", "That", "There", "Someone", "Everyone", "Nobody", "Everybody",
    "Je", "Tu", "Il", "Elle", "On", "Nous", "Ils", "Elles", "Ce", "Cela", "Ça", "Quelqu'un", "Tout",
)

# Top-level domains that make a bare `name.tld` a link. Those that are also common words or file extensions
# (it, me, to, in, is, so, de, es, md, py, sh, zip…) only count when a path follows (`example.it/page`).
LINK_TLDS: tuple[str, ...] = (
    "com", "net", "org", "edu", "gov", "mil", "info", "biz", "io", "ai", "dev", "app", "xyz", "online",
    "site", "store", "shop", "blog", "tech", "news", "club", "co", "ly", "tv", "fm", "gg",
    "uk", "fr", "ma", "dz", "tn", "ca", "au", "ru", "cn", "jp", "br", "nl", "ch", "eu", "ie", "nz", "za",
    "mx", "cl", "pt", "dk", "fi", "cz", "gr", "hu", "ro", "tr", "ua", "kr", "sg", "hk", "tw", "ph", "vn", "sa",
    "ae", "eg", "il", "ir", "pk", "ng", "ke", "sn", "cm", "qa", "lu", "ar", "se", "nu", "ws", "cc",
)
LINK_TLDS_WITH_PATH_ONLY: tuple[str, ...] = (
    "it", "me", "to", "in", "is", "at", "be", "us", "no", "so", "my", "am", "do", "es", "de", "id", "la", "ms",
    "md", "py", "sh", "pl", "zip", "mov", "ci", "th", "ps", "rs", "nf", "ag", "gl", "im", "fyi",
)

# Words, one of which every SYSTEM_EVENTS line contains (lower case): lines without any are not even tried.
SYSTEM_EVENT_WORDS: tuple[str, ...] = (
    "created", "added", "left", "removed", "joined", "changed", "deleted", "turned", "pinned", "admin", "missed",
    "security", "waiting", "business", "créé", "ajouté", "retiré", "parti", "quitté", "rejoint", "modifié",
    "changé", "supprimé", "activé", "épinglé", "manqué", "sécurité", "attente",
    "creó", "creaste", "añadió", "añadiste", "salió", "saliste", "eliminó", "cambió", "unió", "perdida",
    "criou", "adicionou", "saiu", "removeu", "mudou", "alterou", "entrou",
    "erstellt", "hinzugefügt", "verlassen", "entfernt", "geändert", "beigetreten", "verpasster",
    "creato", "aggiunto", "uscit", "abbandonato", "rimosso", "cambiato", "invito", "persa",
    "aangemaakt", "toegevoegd", "verlaten", "vertrokken", "verwijderd", "gewijzigd", "uitnodigingslink", "gemiste",
    "oluşturdu", "ekledi", "ayrıldı", "çıkardı", "cevapsız",
    "membuat", "menambahkan", "keluar", "mengeluarkan", "bergabung", "terjawab",
    "أنشأ", "أضاف", "غادر", "أزال", "انضم", "فائتة",
)

# ---------------------------------------------------------------------------------------------------------------
# Patterns built from the tables.
# ---------------------------------------------------------------------------------------------------------------

# Every horizontal space the whitespace rule collapses (what str.split() splits on, once control characters are
# gone). Wherever a pattern allows a space it allows a run of these, so collapsing spaces never creates a match
# that was not there before (cleaning stays idempotent).
_HSPACE = "[ \\t\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000]"
_FORMAT_CHARS = "\\u00ad\\u061c\\u180e\\u200b\\u200e\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff"
_D = "[0-9]"  # phone numbers and export timestamps use ASCII digits


def _phrase(text: str) -> str:
    """A table phrase as a regex: literal, any run of spaces where it has one, either apostrophe."""
    words = [re.escape(w).replace("'", "['’]") for w in text.split()]
    return f"{_HSPACE}+".join(words)


def _any_of(phrases: Iterable[str]) -> str:
    ordered = sorted(set(phrases), key=len, reverse=True)  # longest first, so a phrase wins over its prefix
    return "(?:" + "|".join(_phrase(p) for p in ordered) + ")"


def _flat(table: dict[str, tuple[str, ...]]) -> list[str]:
    return [p for phrases in table.values() for p in phrases]


def _merged(*tables: dict[str, tuple[str, ...]]) -> list[str]:
    """The phrases of several tables, once each, without the brackets some are written with: this module's
    tables and the WhatsApp parser's (tasks.whatsapp.phrases), so that what the parser recognises is also
    what cleaning removes."""
    return list(dict.fromkeys(p.strip("<>‹›").strip() for table in tables for p in _flat(table)))


_MEDIA_PHRASES = _merged(MEDIA_OMITTED, whatsapp_phrases.MEDIA_OMITTED)
_DELETED_PHRASES = _merged(DELETED_MESSAGE, whatsapp_phrases.DELETED)
_EDITED_PHRASES = _merged(EDITED_MESSAGE, whatsapp_phrases.EDITED_MARKERS)


def _word_trie(words: Iterable[str]) -> str:
    """An alternation of literal words factored by common prefixes (`o(?:mis|mitted)`): Python's regex engine
    tries alternatives one by one, so sharing prefixes makes scanning a long text several times faster."""
    words = sorted(set(words))
    if words == [""]:
        return ""
    groups: dict[str, list[str]] = {}
    for w in words:
        groups.setdefault(w[:1], []).append(w[1:])
    branches = []
    for first, rests in groups.items():
        if first == "":
            continue
        inner = _word_trie(rests)
        optional = "" in rests
        if inner and optional:
            branches.append(f"{re.escape(first)}(?:{inner})?")
        elif inner:
            branches.append(f"{re.escape(first)}{inner}" if len(rests) == 1 else f"{re.escape(first)}(?:{inner})")
        else:
            branches.append(re.escape(first))
    return branches[0] if len(branches) == 1 else "|".join(branches)


def _hint(words: Iterable[str]) -> re.Pattern:
    """Finds any of the (lower-case) words; used on the lower-cased text."""
    return re.compile(f"(?:{_word_trie(w.lower() for w in words)})")


def _longest_words(phrases: Iterable[str]) -> list[str]:
    """A word each phrase must contain, to use as its hint (not one with an apostrophe, which may be ’ or ')."""
    return [max((w for w in p.split() if "'" not in w), key=len) for p in phrases]


class _LineFilter:
    """Applies a line pattern only to the lines that contain a hint word, found by one fast scan of the
    lower-cased text; the hint words must be such that a line without any cannot match."""

    def __init__(self, hint: re.Pattern, line: re.Pattern):
        self.hint = hint
        self.line = line

    def sub(self, text: str) -> str:
        low = text.lower()
        if len(low) != len(text):  # a few characters (İ) grow when lower-cased: positions would not line up
            return self.line.sub("", text) if self.hint.search(low) else text
        pieces: list[str] = []
        last = done = 0
        for m in self.hint.finditer(low):
            if m.start() < done:
                continue
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            end = len(text) if end < 0 else end + 1  # the line with its line break
            done = end
            line = text[start:end]
            new = self.line.sub("", line)
            if new != line:
                pieces += (text[last:start], new)
                last = end
        if not pieces:
            return text
        pieces.append(text[last:])
        return "".join(pieces)


def _whole_message(phrases: list[str]) -> _LineFilter:
    """One of the phrases as a whole message: a line of its own (removed with its line break), or all that
    follows an export's "Name:" or "[date]" on a line."""
    body = rf"{_HSPACE}*{_any_of(phrases)}{_HSPACE}*\.?{_HSPACE}*"
    line = re.compile(rf"^{body}(?:\n|\Z)|(?<=[:\]]){_HSPACE}{body}$", re.I | re.M)
    return _LineFilter(_hint(_longest_words(phrases)), line)


_MEDIA_BRACKETED = re.compile(rf"[<‹]{_HSPACE}*{_any_of(_MEDIA_PHRASES)}{_HSPACE}*[>›]", re.I)
_MEDIA_BARE = _whole_message(_MEDIA_PHRASES)
_MEDIA_ATTACHED = re.compile(
    rf"[<‹]{_HSPACE}*{_any_of(_merged(ATTACHED_LABELS, whatsapp_phrases.ATTACHED_LABELS))}{_HSPACE}*:[^<>‹›\n]*[>›]",
    re.I,
)
_FILE_ATTACHED_NOTE = re.compile(
    rf"\({_HSPACE}*{_any_of(_merged(FILE_ATTACHED, whatsapp_phrases.FILE_ATTACHED))}{_HSPACE}*\)", re.I
)
# The attachment is the whole message, so after "Name:" (or alone on its line) its name may contain spaces
# ("Max Caulfield.vcf"); elsewhere only a space-free file name counts.
_FILE_ATTACHED = re.compile(
    r"(?:(?:^|(?<=[:\]]))[^\n<>:]{0,120}?|[^\s<>:\"/\\|?*()]+)\.\w{1,5}" + f"{_HSPACE}*{_FILE_ATTACHED_NOTE.pattern}",
    re.I | re.M,
)

_DELETED = _whole_message(_DELETED_PHRASES)
_EDITED_BRACKETED = re.compile(rf"[<‹]{_HSPACE}*{_any_of(_EDITED_PHRASES)}\.?{_HSPACE}*[>›]", re.I)
_EDITED_BARE = _whole_message(_EDITED_PHRASES)

# An export line's timestamp, e.g. "12/24/14, 17:08 - ", "[20.06.19, 15:58:47] ", "06/20/2020, 00:08 a. m. - ".
_EXPORT_TIMESTAMP = (
    rf"(?:\[?{_D}{{1,4}}[./\-]{_D}{{1,2}}[./\-]{_D}{{1,4}},?{_HSPACE}+{_D}{{1,2}}[:.]{_D}{{2}}(?:[:.]{_D}{{2}})?"
    rf"(?:{_HSPACE}*[AaPp]\.?{_HSPACE}*[Mm]\.?)?\]?:?{_HSPACE}*(?:-{_HSPACE}*)?)"
)
# capitals of Latin-1 and of Latin Extended-A (Ş, İ, Ł, Č…: Turkish, Polish, Czech names)
_CAPITAL = "A-ZÀ-ÖØ-Þ" + "".join(c for c in map(chr, range(0x100, 0x180)) if c.isupper())
_NAME = (
    rf"(?:~{_HSPACE}*)?(?:\+{_D}(?:{_HSPACE}|[0-9\-()]){{4,40}}{_D}"
    rf"|(?!(?:{'|'.join(re.escape(w) for w in NOT_A_NAME)})\b)[{_CAPITAL}][\w'’.\-]*"
    rf"(?:{_HSPACE}+(?:[{_CAPITAL}][\w'’.\-]*|[^\w\s:,]+)){{0,3}})"
)
_WHO = rf"(?:You|Vous|{_NAME})"
_ONE_OF_NAMES = rf"(?:you|You|vous|Vous|{_NAME})"
_NAMES = (
    rf"{_ONE_OF_NAMES}(?:(?:,{_HSPACE}*|{_HSPACE}+(?:and|et|y|e|und|en|ve|dan){_HSPACE}+){_ONE_OF_NAMES}){{0,30}}"
)
# a name in Arabic script (words of Arabic letters, "و" between names) or a phone number
_AR_WORD = "[\u0621-\u064a\u066e-\u06d3\u06fa-\u06ff][\u0621-\u065f\u066e-\u06d3\u06fa-\u06ff]*"
_AR_WHO = (
    rf"(?:(?:\+{_D}(?:{_HSPACE}|[0-9\-()]){{4,40}}{_D}|{_AR_WORD})"
    rf"(?:(?:{_HSPACE}+|،{_HSPACE}*)(?:\+{_D}(?:{_HSPACE}|[0-9\-()]){{4,40}}{_D}|{_AR_WORD})){{0,12}})"
)
_QUOTED = r"[\"“«„][^\n\"“”«»]{0,200}[\"”»“]"


def _event(template: str) -> str:
    pattern = template.replace("'s ", "['’]s ").replace(" ", f"{_HSPACE}+")
    pattern = pattern.replace("{who}", _WHO).replace("{names}", _NAMES).replace("{ar_who}", _AR_WHO)
    return pattern.replace("{quoted}", _QUOTED)


_SYSTEM_EVENT = _LineFilter(
    _hint(SYSTEM_EVENT_WORDS),
    re.compile(
        rf"^{_HSPACE}*{_EXPORT_TIMESTAMP}?(?:{'|'.join(_event(e) for e in SYSTEM_EVENTS)})"
        rf"{_HSPACE}*\.?{_HSPACE}*(?:\n|\Z)",
        re.M,
    ),
)
_ENCRYPTION_NOTICE = _LineFilter(
    _hint(_longest_words(ENCRYPTION_NOTICES)),
    re.compile(rf"^[^\n]*{_any_of(ENCRYPTION_NOTICES)}[^\n]*(?:\n|\Z)", re.I | re.M),
)

# @mentions: `@Name`, `@+212 6…` (a number), `@⁨Name With Spaces⁩` (WhatsApp wraps names in U+2068…U+2069).
# Format characters (and a stray ZWJ) may sit between @ and the name, since bidi_chars runs later.
_MENTION_GAP = f"[{_FORMAT_CHARS}\\u200d]*"
_MENTION = re.compile(
    r"(?<![\w.@+\-/:])@(?:"
    rf"{_MENTION_GAP}\u2068[^\u2069\n]{{1,80}}\u2069"
    rf"|{_MENTION_GAP}(?:\+{_D}(?:(?:{_HSPACE}+|-)?{_D}){{6,16}}|{_D}{{8,15}}"
    r"|[^\W\d][\w\u0300-\u036f]*(?:[.\-_][\w\u0300-\u036f]+)*)"
    # a name glued to more name characters or to another @ is not a mention but part of some address
    r"(?![\w@]|[.\-_][\w@]))"
)

_EMAIL = re.compile(
    r"(?<![\w.%+\-])(?:mailto:)?[\w][\w.%+\-]*@[\w](?:[\w\-]*[\w])?(?:\.[\w](?:[\w\-]*[\w])?)*\.[^\W\d_]{2,24}"
    r"(?![\w\-@])",
    re.I,
)

# A URL runs to the next space; trailing punctuation belongs to the sentence.
_URL_TAIL = r"(?:[^\s<>\"]*[^\s<>\".,;:!?)\]}'»”’…])?"
_URL_SCHEME = re.compile(rf"(?i:\b(?:https?|ftp)://|\bwww{_D}{{0,3}}\.)[^\s<>\"]{_URL_TAIL}")
# A bare domain starts with a label after a space or punctuation (not inside a word, an address or a path); the
# cheap `_TLD_HINT` scan (it starts at a dot) tells whether the full pattern needs to run at all.
_TLD_HINT = re.compile(rf"\.(?:{_word_trie(LINK_TLDS + LINK_TLDS_WITH_PATH_ONLY)})(?![\w\-])")
_LABELS = r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+"
_BARE_DOMAIN = re.compile(
    rf"(?<![\w@.\-/:])"
    rf"(?:{_LABELS}(?:{_word_trie(LINK_TLDS)})(?::{_D}{{2,5}})?(?:/{_URL_TAIL})?"
    rf"|{_LABELS}(?:{_word_trie(LINK_TLDS_WITH_PATH_ONLY)})(?::{_D}{{2,5}})?/{_URL_TAIL})"
    r"(?![\w\-@])"
)

# Phone numbers. International ones start with + or 00; local ones must look like a national plan (a leading 0
# and the usual grouping, or the North American 3-3-4), so years, dates, times, prices and decimals stay.
_PHONE_SEP = rf"(?:{_HSPACE}*[.\-]?{_HSPACE}*)"
_PHONE = re.compile(
    r"(?<![\w+@/.,\-])(?:"
    # +33 6 12 34 56 78, +1 (555) 013-2847, 0044 20 7946 0958
    rf"(?P<intl>(?:\+|00)[1-9]{_D}{{0,2}}(?:{_PHONE_SEP}(?:\({_D}{{1,4}}\)|{_D}{{1,5}})){{1,7}})"
    # 06 12 34 56 78, 06.12.34.56.78, 0612345678 (one separator throughout)
    rf"|(?P<pairs>0[1-9](?:(?P<sep>[.\-]?){_D}{{2}}(?:(?P=sep){_D}{{2}}){{3}}|(?:{_HSPACE}+{_D}{{2}}){{4}}))"
    # 020 7946 0958, 030 1234567, 0171/1234567
    rf"|(?P<grouped>0{_D}{{2,4}}(?:{_HSPACE}+|-|/){_D}{{3,8}}(?:(?:{_HSPACE}+|-){_D}{{3,4}})?)"
    # (555) 013-2847, 555-013-2847, 1-800-555-0199
    rf"|(?P<nanp>(?:1(?:{_HSPACE}+|[.\-]))?(?:\({_D}{{3}}\){_HSPACE}*|{_D}{{3}}[.\-]){_D}{{3}}[.\-]{_D}{{4}})"
    r")(?![\w@]|[.,]\d)"
)
_MIN_PHONE_DIGITS = 8

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f]")
_OTHER_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")
_FORMAT = re.compile(f"[{_FORMAT_CHARS}]")
_ZWJ_RUN = re.compile("\u200d+")
_MANY_NEWLINES = re.compile(r"\n{3,}")


# ---------------------------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------------------------


class CleanRules(BaseModel):
    """Which cleaning rules run. Every rule is on by default."""

    model_config = ConfigDict(extra="forbid")

    control_chars: bool = True
    mentions: bool = True
    bidi_chars: bool = True
    unicode_nfc: bool = True
    system_messages: bool = True
    media_placeholders: bool = True
    deleted_edited_markers: bool = True
    emails: bool = True
    links: bool = True
    phone_numbers: bool = True
    whitespace: bool = True


def _rule_control_chars(text: str) -> str:
    """Line breaks of every kind become \\n; other C0/C1 control characters (not tab) go."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _OTHER_LINE_BREAKS.sub("\n", text)
    return _CONTROL.sub("", text)


def _rule_mentions(text: str) -> str:
    return _MENTION.sub("", text) if "@" in text else text


def _rule_bidi_chars(text: str) -> str:
    """Direction marks, isolates, BOMs and other invisible format characters go; ZWJ stays inside emoji."""
    text = _FORMAT.sub("", text)
    if "\u200d" in text:
        text = _ZWJ_RUN.sub(_keep_joining_zwj, text)
    return text


def _keep_joining_zwj(m: re.Match) -> str:
    # A joiner between two non-ASCII characters builds an emoji sequence (👨‍👩‍👧) or an Indic/Arabic form;
    # anywhere else (next to a space, ASCII or the text's edge) it joins nothing.
    text, start, end = m.string, m.start(), m.end()
    if 0 < start and end < len(text) and _joinable(text[start - 1]) and _joinable(text[end]):
        return "\u200d"
    return ""


def _joinable(char: str) -> bool:
    return ord(char) > 0x7F and not char.isspace()


def _rule_unicode_nfc(text: str) -> str:
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _rule_system_messages(text: str) -> str:
    """Whole lines that WhatsApp writes itself: encryption notices, group created, X added Y, X left…"""
    return _SYSTEM_EVENT.sub(_ENCRYPTION_NOTICE.sub(text))


def _rule_media_placeholders(text: str) -> str:
    if "<" in text or "‹" in text:
        text = _MEDIA_BRACKETED.sub("", _MEDIA_ATTACHED.sub("", text))
    if "(" in text and _FILE_ATTACHED_NOTE.search(text):
        text = _FILE_ATTACHED.sub("", text)
    return _MEDIA_BARE.sub(text)


def _rule_deleted_edited_markers(text: str) -> str:
    if "<" in text or "‹" in text:
        text = _EDITED_BRACKETED.sub("", text)
    return _DELETED.sub(_EDITED_BARE.sub(text))


def _rule_emails(text: str) -> str:
    return _EMAIL.sub("", text) if "@" in text else text


def _rule_links(text: str) -> str:
    if "://" in text or "www" in text or "WWW" in text:
        text = _URL_SCHEME.sub("", text)
    if _TLD_HINT.search(text):
        text = _BARE_DOMAIN.sub(_drop_domain, text)
    return text


def _drop_domain(m: re.Match) -> str:
    # "3.5.co" is not a host name: some label before the top-level domain must have a letter
    host = m.group(0).split("/", 1)[0].split(":", 1)[0]
    return "" if any(c.isalpha() for c in host.rsplit(".", 1)[0]) else m.group(0)


def _rule_phone_numbers(text: str) -> str:
    if sum(map(text.count, "0123456789")) < _MIN_PHONE_DIGITS:
        return text
    return _PHONE.sub(_drop_phone, text)


def _drop_phone(m: re.Match) -> str:
    if intl := m.group("intl"):
        digits = sum(c.isdigit() for c in intl) - (2 if intl.startswith("00") else 0)
        return "" if _MIN_PHONE_DIGITS <= digits <= 15 else m.group(0)
    if m.group("grouped"):
        digits = sum(c.isdigit() for c in m.group("grouped"))
        return "" if 10 <= digits <= 12 else m.group(0)
    return ""


def _rule_whitespace(text: str) -> str:
    """Runs of spaces become one, lines lose their edges, at most one blank line in a row."""
    lines = [" ".join(line.split()) for line in text.split("\n")]
    return _MANY_NEWLINES.sub("\n\n", "\n".join(lines)).strip()


# (name, function) in the order they apply; names match the CleanRules fields. Mentions come before bidi_chars
# because WhatsApp's U+2068…U+2069 isolates are what delimit a multi-word name; system lines come before the
# token rules that would eat the names and numbers inside them; emails come before links.
RULES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("control_chars", _rule_control_chars),
    ("mentions", _rule_mentions),
    ("bidi_chars", _rule_bidi_chars),
    ("unicode_nfc", _rule_unicode_nfc),
    ("system_messages", _rule_system_messages),
    ("media_placeholders", _rule_media_placeholders),
    ("deleted_edited_markers", _rule_deleted_edited_markers),
    ("emails", _rule_emails),
    ("links", _rule_links),
    ("phone_numbers", _rule_phone_numbers),
    ("whitespace", _rule_whitespace),
)

# Rules that only normalise characters and spacing; the others remove content.
_NORMALISING_RULES = frozenset({"control_chars", "bidi_chars", "unicode_nfc", "whitespace"})
# Removing one thing can reveal another (a placeholder between the halves of an address, a system line once its
# trailing link is gone), so the rules run again while content rules still fire; this makes cleaning idempotent.
MAX_PASSES = 4


def clean_text(text: str, rules: CleanRules) -> tuple[str, Counter]:
    """Apply the enabled rules; return the cleaned text and, per rule, 1 if it changed the text.

    A text that a rule empties (nothing but whitespace left) becomes "".
    """
    fired: Counter = Counter()
    enabled = [(name, rule) for name, rule in RULES if getattr(rules, name)]
    for _ in range(MAX_PASSES):
        removed = False
        for name, rule in enabled:
            new = rule(text)
            if new != text:
                fired[name] = 1
                if name not in _NORMALISING_RULES:
                    removed = True
                    if not new.strip():
                        new = ""
                text = new
        if not removed or not text:
            break
    return text, fired
