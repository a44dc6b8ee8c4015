"""What cleaning means, written plainly: the enabled rules run in passes over the whole text until a pass removes
nothing. `clean_text_plainly` is the oracle that the incremental engine (`tasks.cleaning.passes`) is tested
against, and the engine falls back on `_plain_passes` where it cannot go line by line."""

from __future__ import annotations

from collections import Counter

from tasks.cleaning.rules import CleanRules, _enabled_steps, _Step

# Removing one thing can reveal another (a placeholder between the halves of an address, a system line once its
# trailing link is gone), so the rules run again while content rules still fire; this makes cleaning idempotent.
MAX_PASSES = 4


def clean_text_plainly(text: str, rules: CleanRules) -> tuple[str, Counter]:
    """What `clean_text` returns, computed the straightforward way: every pass runs every rule on the whole text."""
    fired: Counter = Counter()
    return _plain_passes(text, _enabled_steps(rules), fired, MAX_PASSES), fired


def _plain_passes(text: str, steps: tuple[_Step, ...], fired: Counter, passes: int) -> str:
    for _ in range(passes):
        removed = False
        for name, rule, removes in steps:
            text, removed_now = _take(name, removes, text, rule(text), fired)
            removed |= removed_now
        if not removed or not text:
            break
    return text


def _take(name: str, removes: bool, text: str, new: str, fired: Counter) -> tuple[str, bool]:
    """The text after rule `name` turned `text` into `new` (noted in `fired` if it changed anything; "" if a
    removing rule left only whitespace), and whether content was removed."""
    if new == text:
        return text, False
    fired[name] = 1
    if removes and not new.strip():
        new = ""
    return new, removes
