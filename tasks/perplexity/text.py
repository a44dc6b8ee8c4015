"""The one text preparation that KenLM sees, at training and at scoring time: CCNet normalisation, then tokens.

Both `kenlm-train` (writing the lmplz corpus) and `perplexity` (scoring documents) go through `lm_lines`, so a
model is always queried with exactly the token strings it was trained on.

Normalisation follows CCNet's `text_normalizer.normalize` with its defaults (case, accents, numbers, punct=1):

1. strip the line; lowercase it;
2. strip accents: Unicode NFD, then drop every combining mark (category Mn);
3. every Unicode decimal digit becomes `0` (`\\d` in Python's `re`, so `٣` and `３` too);
4. CCNet's table of CJK/typographic punctuation is replaced by ASCII (`，`→`,` `“`→`"` `’`→`'` `…`→`...` `—`→` - `);
5. control characters (U+0000–U+001F, U+007F–U+009F) are removed.

Three small departures, all applied identically on both sides: the result of step 2 is recomposed with NFC
(CCNet leaves it decomposed, which splits Hangul syllables into jamo); a tab becomes a space instead of gluing two
words together; invisible format characters (soft hyphen, zero-width space/joiners, bidi marks, BOM) are removed.

Tokenisation (CCNet used a SentencePiece model per language; we have no such model for our languages) is one
regular expression over the normalised line: a run of word characters is one token, each other non-space
character (punctuation, symbol, emoji) is a token of its own, and each CJK ideograph or kana is a token of its own
(those scripts do not separate words with spaces). Tokens never contain whitespace, so lmplz and kenlm (which split
on ASCII whitespace) see the same tokens, and `<s>`, `</s>`, `<unk>` in a text become `<` `s` `>` and cannot
collide with KenLM's own symbols.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Iterator

# CCNet's replacement table (text_normalizer.UNICODE_PUNCT). `１` (fullwidth one) is listed there too, but its
# digit rule runs first and turns it into `0`, so the entry never fires; it is left out here.
UNICODE_PUNCT = {
    "，": ",",
    "。": ".",
    "、": ",",
    "„": '"',
    "”": '"',
    "“": '"',
    "«": '"',
    "»": '"',
    "」": '"',
    "「": '"',
    "《": '"',
    "》": '"',
    "´": "'",
    "∶": ":",
    "：": ":",
    "？": "?",
    "！": "!",
    "（": "(",
    "）": ")",
    "；": ";",
    "–": "-",
    "—": " - ",
    "．": ". ",
    "～": "~",
    "’": "'",
    "…": "...",
    "━": "-",
    "〈": "<",
    "〉": ">",
    "【": "[",
    "】": "]",
    "％": "%",
    "►": "-",
}

_CONTROL = [*range(0, 32), *range(127, 160)]
_FORMAT = [0x00AD, *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2065), 0xFEFF]

_TABLE: dict[int, str | None] = {c: None for c in _CONTROL + _FORMAT}
_TABLE[ord("\t")] = " "
_TABLE.update({ord(k): v for k, v in UNICODE_PUNCT.items()})

# An ASCII line's steps in one pass: its digits become 0 and the ASCII entries of _TABLE apply (no mark, no
# Unicode punctuation can be in it). Their outputs ("0", " ") are not keys of the other table, so one pass is
# the two in a row.
_ASCII_TABLE: dict[int, str | None] = {
    **{ord(d): "0" for d in "123456789"}, **{c: v for c, v in _TABLE.items() if c < 128}
}
_DIGIT = re.compile(r"\d")

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")
_ASCII_TOKEN = re.compile(r"\w+|[^\w\s]")  # _TOKEN on ASCII text, where no CJK alternative can match


@functools.cache
def _mark_table() -> dict[int, None]:
    """Every combining mark (Unicode category Mn) → deleted; built once per process (~0.1 s)."""
    return dict.fromkeys(c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Mn")


@functools.cache
def _non_ascii_table() -> dict[int, str | None]:
    # one str.translate pass does the mark stripping, the punctuation table and the control characters
    return {**_mark_table(), **_TABLE}


def strip_accents(text: str) -> str:
    """Remove combining marks (Unicode category Mn) after canonical decomposition: `é` → `e`, `ñ` → `n`."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).translate(_mark_table()))


def normalize_line(line: str) -> str:
    """CCNet normalisation of one line (see the module docstring for the exact steps)."""
    line = line.strip()
    if not line:
        return ""
    line = line.lower()
    if line.isascii():
        return line.translate(_ASCII_TABLE)
    line = _DIGIT.sub("0", unicodedata.normalize("NFD", line))
    return unicodedata.normalize("NFC", line.translate(_non_ascii_table()))


def tokenize(normalized: str) -> list[str]:
    """Tokens of an already normalised line: word runs, single punctuation/symbol characters, single CJK chars."""
    return (_ASCII_TOKEN if normalized.isascii() else _TOKEN).findall(normalized)


def lm_tokens(line: str) -> list[str]:
    """Normalise and tokenise one line: what KenLM is trained on and scored with."""
    return tokenize(normalize_line(line))


def lm_lines(text: str) -> Iterator[list[str]]:
    """The token lists of a text's lines (split on any Unicode line break), skipping lines without tokens.

    A document is scored line by line, as CCNet does; a blank line adds nothing (CCNet would score it as a lone
    `</s>`, which rewards documents with many empty lines).
    """
    for line in text.splitlines():
        tokens = lm_tokens(line)
        if tokens:
            yield tokens
