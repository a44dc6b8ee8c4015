"""Style statistics of a set of replies, each compared with the person's real replies to the same turns: length
in characters (two-sample Kolmogorov–Smirnov distance), emoji, language mix (total variation distance between
the language shares) and distinct-1/2 (unique n-grams over all n-grams of the set, Li et al. 2016; it falls with
the size of the set, so only sets of equal size compare, as the rows of one table are).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

# Pictographs and symbols that render as emoji (flags are pairs of regional indicators, inside the first range).
EMOJI_RE = re.compile("[\U0001f000-\U0001faff\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\u3030\u303d\u3297\u3299]")


_SKIN_TONE = re.compile("[\U0001f3fb-\U0001f3ff]")
_FLAG = re.compile("[\U0001f1e6-\U0001f1ff]{2}")


def emoji_count(text: str) -> int:
    """Emoji in a text; a flag (two regional indicators) and a skin-toned emoji count once."""
    return len(EMOJI_RE.findall(_SKIN_TONE.sub("", _FLAG.sub("\U0001f3f3", text))))


def emoji_share(texts: Sequence[str]) -> float:
    """Share of texts with at least one emoji."""
    return sum(1 for t in texts if EMOJI_RE.search(t)) / len(texts) if texts else 0.0


def char_lengths(texts: Sequence[str]) -> np.ndarray:
    return np.array([len(t) for t in texts], dtype=np.int64)


def ks_distance(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sample Kolmogorov–Smirnov statistic: the largest gap between the two empirical distribution functions
    (0: the same distribution, 1: no overlap)."""
    x, y = np.sort(np.asarray(a, dtype=np.float64)), np.sort(np.asarray(b, dtype=np.float64))
    if len(x) == 0 or len(y) == 0:
        raise ValueError("the KS distance needs two non-empty samples")
    points = np.concatenate([x, y])
    fx = np.searchsorted(x, points, side="right") / len(x)
    fy = np.searchsorted(y, points, side="right") / len(y)
    return float(np.max(np.abs(fx - fy)))


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Unique n-grams of lower-cased whitespace tokens over all n-grams of the texts (0 when there are none)."""
    grams: list[tuple[str, ...]] = []
    for text in texts:
        tokens = text.lower().split()
        grams += [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


def language_mix(langs: Sequence[str]) -> dict[str, float]:
    """Share of each language, largest first."""
    counts = Counter(langs)
    total = sum(counts.values())
    return {lang: n / total for lang, n in counts.most_common()} if total else {}


def total_variation(p: dict[str, float], q: dict[str, float]) -> float:
    """Half the L1 distance between two distributions (0: equal, 1: disjoint)."""
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


@dataclass(frozen=True)
class StyleStats:
    """The style of one set of replies, beside the person's real ones."""

    replies: int
    mean_chars: float
    length_ks: float  # KS distance of the length distributions
    emoji_share: float
    emoji_per_reply: float
    languages: dict[str, float]
    language_tv: float  # total variation distance of the language shares
    distinct_1: float
    distinct_2: float

    def as_dict(self) -> dict:
        return asdict(self)


def style_stats(texts: Sequence[str], langs: Sequence[str], person_texts: Sequence[str],
                person_langs: Sequence[str]) -> StyleStats:
    """Style of `texts` (with their languages) against the person's real replies."""
    lengths = char_lengths(texts)
    mix = language_mix(langs)
    return StyleStats(
        replies=len(texts),
        mean_chars=float(lengths.mean()) if len(texts) else 0.0,
        length_ks=ks_distance(lengths, char_lengths(person_texts)) if len(texts) and person_texts else 1.0,
        emoji_share=emoji_share(texts),
        emoji_per_reply=sum(map(emoji_count, texts)) / len(texts) if texts else 0.0,
        languages=mix,
        language_tv=total_variation(mix, language_mix(person_langs)),
        distinct_1=distinct_n(texts, 1),
        distinct_2=distinct_n(texts, 2),
    )
