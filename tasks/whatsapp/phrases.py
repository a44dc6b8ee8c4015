"""Every localised phrase the WhatsApp parser recognises, in one table per purpose and one row per language.

WhatsApp writes placeholders ("<Media omitted>"), markers ("<This message was edited>") and system events
("Missed voice call") in the phone's language. To support another language, add its phrases here; nothing else
changes. Languages covered: en, fr, es, pt, de, it, nl, tr, ar, id (and ru where known).

Matching rules (applied in `tasks.whatsapp.classify`):
- whole-message phrases (`MEDIA_OMITTED`, `DELETED`) are compared after case folding, with surrounding `<>`/`‹›`,
  whitespace and a final full stop removed;
- `EDITED_MARKERS` are found at the end of a message, inside `<…>`;
- the `*_PATTERNS` tables are case-insensitive regular expressions.
The clean stage may import these tables to strip the same placeholders from text.
"""

from __future__ import annotations

# The tables are laid out by language, several phrases per line, for reading side by side.
# fmt: off

# Whole-message placeholders of media left out of an export ("Export chat → Without media"), Android and iOS.
MEDIA_OMITTED: dict[str, tuple[str, ...]] = {
    "en": (
        "<Media omitted>", "image omitted", "video omitted", "audio omitted", "sticker omitted",
        "GIF omitted", "document omitted", "Contact card omitted", "voice message omitted",
        "<View once voice message omitted>", "<View once photo omitted>", "<View once video omitted>",
    ),
    "fr": (
        "<Médias omis>", "<Fichier omis>", "image absente", "vidéo absente", "audio omis", "autocollant omis",
        "GIF retiré", "document omis", "Carte de contact omise",
    ),
    "es": (
        "<Multimedia omitido>", "<Archivo omitido>", "imagen omitida", "video omitido", "audio omitido",
        "sticker omitido", "GIF omitido", "documento omitido", "tarjeta de contacto omitida",
    ),
    "pt": (
        "<Mídia oculta>", "<Arquivo de mídia oculto>", "<Multimédia omitido>", "<Multimédia omitida>",
        "imagem ocultada", "vídeo omitido", "áudio ocultado", "figurinha omitida", "GIF omitido",
        "documento omitido", "cartão de contato omitido",
    ),
    "de": (
        "<Medien ausgeschlossen>", "<Medien weggelassen>", "Bild weggelassen", "Video weggelassen",
        "Audio weggelassen", "Sticker weggelassen", "GIF weggelassen", "Dokument weggelassen",
        "Kontaktkarte ausgelassen",
    ),
    "it": (
        "<Media omessi>", "immagine omessa", "video omesso", "audio omesso", "sticker omesso", "GIF esclusa",
        "documento omesso", "scheda contatto omessa",
    ),
    "nl": (
        "<Media weggelaten>", "afbeelding weggelaten", "video weggelaten", "audio weggelaten",
        "sticker weggelaten", "GIF weggelaten", "document weggelaten", "contactkaart weggelaten",
    ),
    "tr": (
        "<Medya dahil edilmedi>", "<Medya atlandı>", "görüntü dahil edilmedi", "video dahil edilmedi",
        "ses dahil edilmedi", "çıkartma dahil edilmedi", "GIF dahil edilmedi", "belge dahil edilmedi",
        "kişi kartı dahil edilmedi",
    ),
    "ar": (
        "<تم استبعاد الوسائط>", "<الوسائط غير مضمنة>", "تم استبعاد الصورة", "تم استبعاد الفيديو",
        "تم استبعاد الصوت", "تم استبعاد الملصق", "تم استبعاد GIF", "تم استبعاد المستند",
        "تم استبعاد بطاقة جهة الاتصال",
    ),
    "id": (
        "<Media tidak disertakan>", "gambar tidak disertakan", "video tidak disertakan",
        "audio tidak disertakan", "stiker tidak disertakan", "GIF tidak disertakan",
        "dokumen tidak disertakan", "kartu kontak tidak disertakan",
    ),
    "ru": ("<Без медиафайлов>", "изображение отсутствует", "видео отсутствует"),
}

# Words meaning "omitted": a short message in `<…>` containing one of them is a media placeholder even when
# the exact wording is missing from MEDIA_OMITTED (WhatsApp rewords these between versions).
OMITTED_WORDS: tuple[str, ...] = (
    "omitted", "omis", "omise", "absente", "omitido", "omitida", "oculto", "oculta", "ocultado", "ocultada",
    "ausgeschlossen", "weggelassen", "ausgelassen", "omesso", "omessa", "omessi", "omesse", "esclusa",
    "weggelaten", "dahil edilmedi", "atlandı", "tidak disertakan", "استبعاد", "غير مضمنة", "без медиафайлов",
)

# Android "with media" exports: "IMG-20180627-WA0028.jpg (file attached)", caption on the following lines.
FILE_ATTACHED: dict[str, tuple[str, ...]] = {
    "en": ("file attached",),
    "fr": ("fichier joint",),
    "es": ("archivo adjunto",),
    "pt": ("arquivo anexado", "ficheiro anexado"),
    "de": ("Datei angehängt",),
    "it": ("file allegato",),
    "nl": ("bestand bijgevoegd",),
    "tr": ("dosya ekli", "dosya eklendi"),
    "ar": ("ملف مرفق",),
    "id": ("file terlampir",),
    "ru": ("файл прикреплен", "файл прикреплён"),
}

# iOS "with media" exports: "<attached: 00000001-PHOTO-2019-06-20-16-00-15.jpg>". The label before the colon
# is localised; the parser also accepts any short label followed by a file name, so this list documents more
# than it restricts.
ATTACHED_LABELS: dict[str, tuple[str, ...]] = {
    "en": ("attached",),
    "fr": ("pièce jointe", "joint"),
    "es": ("adjunto",),
    "pt": ("anexado", "anexo"),
    "de": ("Anhang",),
    "it": ("allegato",),
    "nl": ("bijgevoegd", "bijlage"),
    "tr": ("ek", "eklendi"),
    "ar": ("مرفق",),
    "id": ("terlampir", "lampiran"),
    "ru": ("вложение",),
}

# Document attachments carry a page count: "report.pdf • 3 pages".
PAGES_WORDS: tuple[str, ...] = (
    "page", "pages", "páginas", "página", "Seiten", "Seite", "pagine", "pagina", "pagina's", "sayfa",
    "halaman", "صفحات", "صفحة", "страниц", "страницы",
)

# Whole-message placeholders of deleted (or never delivered) messages.
DELETED: dict[str, tuple[str, ...]] = {
    "en": (
        "This message was deleted", "You deleted this message", "This message was deleted by admin",
        # a message that never arrived: no content either
        "Waiting for this message. This may take a while",
    ),
    "fr": ("Ce message a été supprimé", "Vous avez supprimé ce message"),
    "es": ("Se eliminó este mensaje", "Eliminaste este mensaje", "Este mensaje fue eliminado"),
    "pt": (
        "Mensagem apagada", "Você apagou esta mensagem", "Esta mensagem foi apagada",
        "Esta mensagem foi eliminada", "Eliminou esta mensagem",
    ),
    "de": ("Diese Nachricht wurde gelöscht", "Du hast diese Nachricht gelöscht"),
    "it": ("Questo messaggio è stato eliminato", "Hai eliminato questo messaggio"),
    "nl": ("Dit bericht is verwijderd", "Je hebt dit bericht verwijderd", "U heeft dit bericht verwijderd"),
    "tr": ("Bu mesaj silindi", "Bu mesajı sildiniz", "Bu mesajı sildin"),
    "ar": ("تم حذف هذه الرسالة", "لقد حذفت هذه الرسالة", "حذفت هذه الرسالة"),
    "id": ("Pesan ini telah dihapus", "Anda menghapus pesan ini", "Pesan ini dihapus"),
    "ru": ("Данное сообщение удалено", "Вы удалили данное сообщение"),
}

# "<This message was edited>" at the end of an edited message; the parser removes it and keeps the text.
EDITED_MARKERS: dict[str, tuple[str, ...]] = {
    "en": ("This message was edited",),
    "fr": ("Ce message a été modifié",),
    "es": ("Se editó este mensaje",),
    "pt": ("Esta mensagem foi editada", "Mensagem editada"),
    "de": ("Diese Nachricht wurde bearbeitet",),
    "it": ("Questo messaggio è stato modificato",),
    "nl": ("Dit bericht is bewerkt",),
    "tr": ("Bu mesaj düzenlendi",),
    "ar": ("تم تعديل هذه الرسالة",),
    "id": ("Pesan ini telah diedit", "Pesan ini diedit"),
    "ru": ("Сообщение изменено",),
}

# Polls: a first line "POLL:" (question on the next line) and "OPTION: … (n votes)" lines.
POLL_KEYWORDS: dict[str, tuple[str, ...]] = {
    "en": ("POLL",), "fr": ("SONDAGE",), "es": ("ENCUESTA",), "pt": ("ENQUETE", "SONDAGEM"),
    "de": ("UMFRAGE",), "it": ("SONDAGGIO",), "nl": ("PEILING",), "tr": ("ANKET",),
    "ar": ("استطلاع",), "id": ("POLLING", "JAJAK PENDAPAT"), "ru": ("ОПРОС",),
}
OPTION_KEYWORDS: dict[str, tuple[str, ...]] = {
    "en": ("OPTION",), "fr": ("OPTION",), "es": ("OPCIÓN",), "pt": ("OPÇÃO",), "de": ("OPTION",),
    "it": ("OPZIONE",), "nl": ("OPTIE",), "tr": ("SEÇENEK",), "ar": ("خيار",), "id": ("OPSI",),
    "ru": ("ВАРИАНТ",),
}

# System events that WhatsApp may write after a name and ": " (iOS puts the chat or caller name there), so an
# author-like prefix does not make them messages. Case-insensitive regexes anchored at the start of the text
# after the prefix: keep them anchored (a leading ".*" makes every message pay for a scan).
SYSTEM_PATTERNS: dict[str, tuple[str, ...]] = {
    "en": (
        # both notices have a second sentence ("Tap to learn more."), which a chat message quoting them rarely has
        r"(?:messages|calls)\b.{0,80}\bend-to-end encrypt\w*\.\s+\S",
        r"missed (?:group )?(?:voice|video) call",
        r"(?:your )?security code (?:with .{1,80}? )?changed",
        r"this chat is with a business account",
        r"you (?:blocked|unblocked) this contact",
    ),
    "fr": (
        r"les (?:messages|appels)\b.*\bde bout en bout",
        r"appel (?:vocal|vidéo) manqué",
        r"(?:votre )?code de sécurité (?:avec|de) .{1,80}? a changé",
    ),
    "es": (
        r"los (?:mensajes|llamadas)\b.*\bde extremo a extremo",
        r"(?:llamada(?: de voz)?|videollamada) perdida",
        r"(?:tu |el )?código de seguridad (?:con|de) .{1,80}? cambió",
    ),
    "pt": (
        r"as (?:mensagens|chamadas)\b.*\bponta[ -]a[ -]ponta",
        r"chamada de (?:voz|vídeo) perdida",
        r"(?:seu |o )?código de segurança (?:com|de) .{1,80}? mudou",
    ),
    "de": (
        r"(?:nachrichten|anrufe)\b.*\bende-zu-ende",
        r"verpasster (?:sprach|video)anruf",
        r"(?:deine |die )?sicherheitsnummer (?:für|mit|von) .{1,80}? (?:hat sich )?geändert",
    ),
    "it": (
        r"i (?:messaggi|chiamate)\b.*\bend-to-end",
        r"(?:chiamata vocale|videochiamata) persa",
        r"(?:il tuo |il )?codice di sicurezza (?:con|di) .{1,80}? è cambiato",
    ),
    "nl": (
        r"(?:berichten|oproepen)\b.*\bend-to-end",
        r"gemiste (?:spraak|video-?)oproep",
        r"(?:je |uw )?beveiligingscode (?:met|van) .{1,80}? (?:is )?gewijzigd",
    ),
    "tr": (
        r"(?:mesajlar|aramalar)\b.*\buçtan uca",
        r"cevapsız (?:sesli|görüntülü) arama",
        r"güvenlik kodu(?:nuz)? .{1,80}?değişti",
    ),
    "ar": (
        r"(?:الرسائل|المكالمات).*(?:تشفير|مشفرة)",
        r"مكالمة (?:صوتية|فيديو) فائتة",
        r"تغيّ?ر رمز الأمان",
    ),
    "id": (
        r"(?:pesan|panggilan)\b.*\bend-to-end",
        r"panggilan (?:suara|video) tak terjawab",
        r"kode keamanan (?:anda )?(?:dengan|untuk) .{1,80}? (?:telah )?berubah",
    ),
    "ru": (
        r"(?:сообщения|звонки)\b.*шифрован",
        r"пропущенный (?:аудио|видео)?звонок",
    ),
}

# Group events that WhatsApp writes without any author prefix. Lines without "Name: " are system lines anyway;
# these patterns matter when the event itself contains ": " (a new subject "Trip: day 2") so that the text
# before that colon is not taken for an author. Searched for in the text before the first ": ", so each
# pattern must be the part of the event that comes before the new subject or description.
GROUP_EVENT_PATTERNS: dict[str, tuple[str, ...]] = {
    "en": (
        r"created group", r"changed the subject", r"changed the group (?:name|description|settings)",
        r"changed this group's (?:icon|settings|description)", r"deleted the group description",
        r"changed the settings", r"pinned a message", r"joined using this group's invite link",
    ),
    "fr": (r"a créé le groupe", r"avez créé le groupe", r"a modifié le sujet", r"a changé le (?:sujet|nom)",
           r"a modifié la description", r"avez modifié (?:le sujet|la description)"),
    "es": (r"creó el grupo", r"creaste el grupo", r"cambió el (?:asunto|nombre)", r"cambiaste el (?:asunto|nombre)",
           r"cambió la descripción", r"cambiaste la descripción"),
    "pt": (r"criou o grupo", r"mudou o (?:assunto|nome)", r"mudou a descrição", r"alterou o (?:assunto|nome)"),
    "de": (r"hat die gruppe", r"hast die gruppe", r"hat den betreff",
           r"hast den betreff", r"hat die gruppenbeschreibung", r"hat den gruppennamen"),
    "it": (r"ha creato il gruppo", r"hai creato il gruppo", r"ha cambiato (?:l'oggetto|il nome|la descrizione)",
           r"hai cambiato (?:l'oggetto|il nome|la descrizione)"),
    "nl": (r"heeft (?:de )?groep", r"heeft het onderwerp", r"heeft de groepsbeschrijving",
           r"heeft de groepsnaam"),
    "tr": (r"grubunu oluşturdu", r"konuyu", r"grup açıklamasını değiştirdi",
           r"grup adını değiştirdi"),
    "ar": (r"أنشأ المجموعة", r"أنشأت المجموعة", r"غيّ?ر (?:الموضوع|وصف المجموعة|اسم المجموعة)"),
    "id": (r"membuat grup", r"mengubah (?:subjek|deskripsi grup|nama grup)"),
}

# Words some locales write between the date and the time: "26/09/2019 à 22:39 - " (French Android),
# "15.3.2023 klo 22.30 - " (Finnish).
DATE_TIME_WORDS: tuple[str, ...] = ("à", "klo")

# 12-hour clock markers written after the time ("9:30 PM", "9:30 p. m.", Arabic "٩:٣٠ م"). Latin forms
# (AM, a.m., a. m., with any case and spacing) are handled by a generic pattern; list the others here.
MERIDIEM_SUFFIXES: dict[str, tuple[str, ...]] = {
    "am": ("ص", "ق.ظ.", "π.μ.", "SA", "vorm.", "午前", "上午", "오전"),
    "pm": ("م", "ب.ظ.", "μ.μ.", "CH", "nachm.", "午後", "下午", "오후"),
}
# Some locales (zh, ja, ko) write the marker before the time: "下午3:04".
MERIDIEM_PREFIXES: dict[str, tuple[str, ...]] = {
    "am": ("上午", "午前", "오전"),
    "pm": ("下午", "午後", "오후"),
}
# fmt: on
