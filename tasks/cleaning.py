"""Text cleaning rules for the `clean` stage: each rule is a small function that can be switched off.

`clean_text` applies the enabled rules in a fixed order and reports how many times each one changed the text,
so the stage can put per-rule counts in its manifest.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from pydantic import BaseModel, ConfigDict

# C0/C1 control characters except tab and newline.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_MANY_NEWLINES = re.compile(r"\n{3,}")


class CleanRules(BaseModel):
    """Which cleaning rules run. Every rule is on by default."""

    model_config = ConfigDict(extra="forbid")

    control_chars: bool = True
    unicode_nfc: bool = True
    whitespace: bool = True


def _rule_control_chars(text: str) -> str:
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def _rule_unicode_nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _rule_whitespace(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _MANY_NEWLINES.sub("\n\n", "\n".join(lines)).strip()


# (name, function) in the order they apply; names match the CleanRules fields.
RULES = (
    ("control_chars", _rule_control_chars),
    ("unicode_nfc", _rule_unicode_nfc),
    ("whitespace", _rule_whitespace),
)


def clean_text(text: str, rules: CleanRules) -> tuple[str, Counter]:
    """Apply the enabled rules; return the cleaned text and, per rule, 1 if it changed the text."""
    fired: Counter = Counter()
    for name, rule in RULES:
        if getattr(rules, name):
            new = rule(text)
            if new != text:
                fired[name] += 1
                text = new
    return text, fired
