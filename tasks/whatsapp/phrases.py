"""Every localised phrase of WhatsApp exports, in one table per purpose and one row per language: what the parser
recognises (`tasks.whatsapp.classify`, `tasks.whatsapp.headers`) and what the clean stage removes (`tasks.cleaning`).

WhatsApp writes placeholders ("<Media omitted>"), markers ("<This message was edited>") and system events
("Missed voice call") in the phone's language. To support another language, add its phrases here; nothing else
changes. Languages covered: en, fr, es, pt, de, it, nl, tr, ar, id (and ru where known).

Matching rules:
- whole-message phrases (`MEDIA_OMITTED`, `DELETED`) are compared after case folding, with surrounding `<>`/`‹›`,
  whitespace and a final full stop removed;
- `EDITED_MARKERS` are found at the end of a message, inside `<…>`;
- the `*_PATTERNS` tables are case-insensitive regular expressions.
Cleaning removes the same placeholders, markers and attachment notes wherever they stand in a text, ignoring case
and brackets, and removes whole system lines with tables of its own (section "Whole system lines").
"""

from __future__ import annotations

# The tables are laid out by language, several phrases per line, for reading side by side.
# fmt: off

# ---------------------------------------------------------------------------------------------------------------
# What a message is: media, attachment, deleted, edited, poll or system event (`tasks.whatsapp.classify`).
# ---------------------------------------------------------------------------------------------------------------

# Whole-message placeholders of media left out of an export ("Export chat → Without media"), Android and iOS.
MEDIA_OMITTED: dict[str, tuple[str, ...]] = {
    "en": (
        "<Media omitted>", "image omitted", "video omitted", "audio omitted", "sticker omitted",
        "GIF omitted", "document omitted", "Contact card omitted", "voice message omitted",
        "<View once voice message omitted>", "<View once photo omitted>", "<View once video omitted>",
        "video note omitted", "View once message",
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
        "GIF omessa", "documento omesso", "scheda contatto omessa",
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
        "<تم استبعاد الوسائط>", "<الوسائط غير مضمنة>", "الوسائط محذوفة", "تم استبعاد الصورة",
        "تم استبعاد الفيديو", "تم استبعاد الصوت", "تم استبعاد الملصق", "تم استبعاد GIF", "تم استبعاد المستند",
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
    "fr": ("fichier joint", "fichier attaché"),
    "es": ("archivo adjunto",),
    "pt": ("arquivo anexado", "ficheiro anexado"),
    "de": ("Datei angehängt",),
    "it": ("file allegato",),
    "nl": ("bestand bijgevoegd",),
    "tr": ("dosya ekli", "dosya eklendi"),
    "ar": ("ملف مرفق", "الملف مرفق"),
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
    "de": ("Anhang", "angehängt"),
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
        "Esta mensagem foi eliminada", "Eliminou esta mensagem", "Apagaste esta mensagem",
    ),
    "de": (
        "Diese Nachricht wurde gelöscht", "Du hast diese Nachricht gelöscht", "Sie haben diese Nachricht gelöscht",
    ),
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

# ---------------------------------------------------------------------------------------------------------------
# Whole system lines, as the clean stage removes them from any text (`tasks.cleaning`): the parser needs fewer,
# since it takes every line without "Name: " for a system line (SYSTEM_PATTERNS, GROUP_EVENT_PATTERNS above),
# while cleaning meets these lines inside documents, after a timestamp or a name, and must tell them from
# sentences ("He left"). Matching ignores case and accepts any run of spaces where a phrase has one.
# ---------------------------------------------------------------------------------------------------------------

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
# Dates and times in export headers (`tasks.whatsapp.headers`).
# ---------------------------------------------------------------------------------------------------------------

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
