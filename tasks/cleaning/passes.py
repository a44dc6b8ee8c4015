"""`clean_text`, the incremental pass engine: the first pass runs the rules on the whole text, later passes only
on the lines that the previous pass changed, with the result of `tasks.cleaning.reference.clean_text_plainly`."""

from __future__ import annotations

from collections import Counter
from functools import partial
from itertools import compress, count
from operator import is_not

from tasks.cleaning.patterns import _URL_ANCHOR
from tasks.cleaning.reference import MAX_PASSES, _plain_passes, _take
from tasks.cleaning.rules import (
    CleanRules,
    _collapse_spaces,
    _enabled_steps,
    _links,
    _may_hold_url_scheme,
    _rule_control_chars,
    _rule_links,
    _rule_unicode_nfc,
    _rule_whitespace,
    _Step,
    _trim_blank_lines,
)


def clean_text(text: str, rules: CleanRules) -> tuple[str, Counter]:
    """Apply the enabled rules; return the cleaned text and, per rule, 1 if it changed the text.

    A text that a rule empties (nothing but whitespace left) becomes "".

    The rules run in passes until a pass removes nothing (at most `MAX_PASSES`). The first pass runs on the whole
    text. Since every rule is line-local, a line that comes through a whole pass unchanged comes through every
    later pass unchanged, so later passes only run on the lines that the previous pass changed. The result is
    that of `clean_text_plainly`, which runs every pass on the whole text.
    """
    steps = _enabled_steps(rules)
    fired: Counter = Counter()
    changed: set[str] = set()
    text, removed, url_scheme = _first_pass(text, steps, fired, changed)
    if not removed or not text:
        return text, fired
    later = _LaterPasses(steps, url_scheme_was_off=not url_scheme)
    for done in range(1, MAX_PASSES):
        result = later.run(text, changed, fired)
        if result is None:
            return _plain_passes(text, steps, fired, MAX_PASSES - done), fired
        text, removed, changed = result
        if not removed or not text:
            break
    return text, fired


def _first_pass(text: str, steps: tuple[_Step, ...], fired: Counter, changed: set[str]) -> tuple[str, bool, bool]:
    """The first pass over the whole text: returns the text, whether content was removed and whether
    `_URL_SCHEME` ran (always true without the links rule); `changed` collects the lines the rules changed. Not
    those that only control characters changed: that rule comes first (every other rule has seen these lines as
    they are now) and a second run of it changes nothing."""
    removed = False
    url_scheme = True
    for name, rule, removes in steps:
        if rule is _rule_links:
            url_scheme = _may_hold_url_scheme(text)
            new = _links(text, url_scheme, changed)
        else:
            new = rule(text, None if rule is _rule_control_chars else changed)
        text, removed_now = _take(name, removes, text, new, fired)
        removed |= removed_now
    return text, removed, url_scheme


# Between the lines that a later pass cleans, so that they can be cleaned as one text and told apart again: a
# line of its own that no rule changes.
_SEPARATOR = "\uffff\n"


class _LaterPasses:
    """The passes after the first, run on the lines that the previous pass changed.

    Any other line came through the previous pass unchanged, and since what a pass does to a line depends on that
    line alone, it comes through this one unchanged too. Two things are not decided line by line, and make `run`
    give up (return None; the caller then runs the remaining passes plainly): a text with "İ" (the line patterns
    then apply to the whole text), and a pass where `_URL_SCHEME` runs (the text has "www"…) after a pass where it
    did not, since a line left alone then ("Www.x.org") may not be now. `url_scheme_was_off` says whether a pass
    may have run without it (it is also set when it did not matter to the lines that pass cleaned).
    """

    def __init__(self, steps: tuple[_Step, ...], url_scheme_was_off: bool):
        self.steps = steps
        self.url_scheme_was_off = url_scheme_was_off

    def run(self, text: str, changed: set[str], fired: Counter) -> tuple[str, bool, set[str]] | None:
        """One pass over `text`, whose lines in `changed` the previous pass changed: the new text, whether a rule
        removed content and the lines this pass changed; or None (see above)."""
        if "\u0130" in text or "\uffff" in text:
            return None
        lines = text.split("\n")
        changed.discard("")  # an empty line stays as it is
        dirty = list(compress(count(), map(changed.__contains__, lines)))
        if not dirty:
            return text, False, set()
        last = len(lines) - 1
        before = [lines[i] + "\n" if i != last else lines[i] for i in dirty]
        work = _SEPARATOR.join(before)
        fired_now: list[str] = []
        removed = False
        spaced_from = None
        for name, rule, removes in self.steps:
            if rule is _rule_links:
                # The other lines decide only for a "Www" in these (which _URL_SCHEME removes when it runs). They
                # hold no "www" or "://" if it did not run in the previous pass: they came through it unchanged.
                url_scheme = _may_hold_url_scheme(work)
                if not url_scheme and not self.url_scheme_was_off and _URL_ANCHOR.search(work):
                    url_scheme = _may_hold_url_scheme(_lines_except(lines, dirty))
                if url_scheme and self.url_scheme_was_off:
                    return None
                self.url_scheme_was_off |= not url_scheme
                new = _links(work, url_scheme)
            elif rule is _rule_whitespace:  # last; the whole text's blank lines and edges are trimmed below
                spaced_from = work
                new = _collapse_spaces(work)
            else:
                new = rule(work)
            if new == work:
                continue
            if rule is _rule_unicode_nfc and "\u0130" in new:
                return None
            if rule is not _rule_whitespace:
                fired_now.append(name)
            if removes:
                removed = True
                if not new.replace(_SEPARATOR, "").strip() and not _lines_except(lines, dirty).strip():
                    for fired_name in fired_now:
                        fired[fired_name] = 1
                    return "", True, set()
            work = new
        after = work.split(_SEPARATOR)
        new_text = _replace_lines(lines, dirty, after)
        if new_text is None:
            return None
        if spaced_from is not None:  # what whitespace changed: the dirty lines, or the whole text's blank lines
            trimmed = _trim_blank_lines(new_text)
            if spaced_from != work or trimmed != new_text:
                fired_now.append("whitespace")
            new_text = trimmed
        for fired_name in fired_now:
            fired[fired_name] = 1
        changed_now = set()
        for chunk, new in zip(before, after, strict=True):
            if chunk != new:
                changed_now.update(new.split("\n"))
        return new_text, removed, changed_now


def _lines_except(lines: list[str], indices: list[int]) -> str:
    skip = set(indices)
    return "\n".join(line for i, line in enumerate(lines) if i not in skip)


def _replace_lines(lines: list[str], indices: list[int], chunks: list[str]) -> str | None:
    """The lines joined, those at `indices` (ascending) replaced by `chunks`: each the line cleaned, with its line
    break (the last line has none), or "" for a line removed. None if the chunks do not fit."""
    if len(chunks) != len(indices):
        return None
    out: list[str | None] = lines.copy()
    last = len(lines) - 1
    removed = False
    for i, chunk in zip(indices, chunks, strict=True):
        if i == last:
            out[i] = chunk
        elif chunk[-1:] == "\n":
            out[i] = chunk[:-1]
        elif chunk:
            return None
        else:
            out[i] = None
            removed = True
    return "\n".join(filter(partial(is_not, None), out) if removed else out)
