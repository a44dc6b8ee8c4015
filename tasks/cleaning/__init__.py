"""Text cleaning rules for the `clean` stage: each rule is a small function that can be switched off.

`clean_text` applies the enabled rules in a fixed order and reports which ones changed the text, so the stage can
put per-rule counts in its manifest. The modules, from the bottom up:
- `phrase_regex`: regexes and tries built from lists of words and phrases;
- `edits`: making a rule's changes to a text and noting the lines they touch;
- `lines`: patterns tried only on the lines that hold one of their hint words;
- `patterns`: every pattern the rules apply, compiled when first used (the WhatsApp phrases they look for, in several
  languages, are data in `tasks.whatsapp.phrases`, shared with the parser);
- `rules`: `CleanRules` and one function per rule;
- `reference`: what cleaning means, plainly (`clean_text_plainly`), the oracle for
- `passes`: `clean_text`, which re-runs the rules only on the lines that the previous pass changed.
"""

from tasks.cleaning.passes import clean_text
from tasks.cleaning.reference import MAX_PASSES, clean_text_plainly
from tasks.cleaning.rules import RULES, CleanRules

__all__ = ["MAX_PASSES", "RULES", "CleanRules", "clean_text", "clean_text_plainly"]
