"""The likeness figures: one row per set of replies (the person's real ones, the others' real turns, each
model's), the result of a measurement, and how people read it — the markdown tables of `likeness.md` (also the
`persona-eval` artifact and what `chatlike eval` prints) and the one-line summary of a pipeline run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tasks.likeness.style import StyleStats

REAL, OTHERS_ROW = "person", "others"  # the rows of real text; the models' rows are named by their stage
MODEL_LABELS = {"base": "base", "sft": "SFT", "lora": "LoRA"}
CELL_CHARS = 90


@dataclass
class LikenessRow:
    """The figures of one set of replies (real or generated)."""

    name: str
    replies: int
    said_by_person: float  # share the who-said-it classifier attributes to the person
    said_by_person_unmemorised: float | None
    auc: float | None  # classifier two-sample test against the person's real replies
    auc_unmemorised: float | None
    memorised: float
    memorised_exact: float
    finished: float | None  # share of replies the model ended itself (not cut at max_new_tokens)
    style: StyleStats
    perplexity: float | None = None

    def as_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "style"}, "style": self.style.as_dict()}


@dataclass
class LikenessResult:
    """A measurement: its rows, sample replies and every reply's labels (`records`, the Parquet rows)."""

    person: str
    held_out: int
    sessions: int
    classes: list[str]
    training_turns: dict[str, int]
    rows: list[LikenessRow]
    samples: list[dict]
    records: list[dict] = field(repr=False)
    settings: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"person": self.person, "held_out_replies": self.held_out, "held_out_sessions": self.sessions,
                "classes": self.classes, "training_turns": self.training_turns,
                "rows": {r.name: r.as_dict() for r in self.rows}, "settings": self.settings}

    def markdown(self) -> str:
        return likeness_markdown(self)

    def summary(self) -> str:
        return summary_line(self)


def row_label(name: str, person: str) -> str:
    if name == REAL:
        return f"{person}, real (ceiling)"
    if name == OTHERS_ROW:
        return "others, real (floor)"
    return MODEL_LABELS.get(name, name)


def short_label(name: str, person: str) -> str:
    return person if name == REAL else MODEL_LABELS.get(name, name)


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1%}"


def _num(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _languages(row: LikenessRow, top: int = 2) -> str:
    mix = ", ".join(f"{lang} {share:.0%}" for lang, share in list(row.style.languages.items())[:top])
    return mix if row.name == REAL else f"{mix} (TV {row.style.language_tv:.2f})"


def _cell(text: str) -> str:
    """A message in one table cell: one line, pipes escaped, long ones cut."""
    flat = " / ".join(line.strip() for line in text.splitlines() if line.strip()) or "∅"
    flat = flat.replace("|", "\\|")
    return flat if len(flat) <= CELL_CHARS else flat[:CELL_CHARS - 1] + "…"


def figures_markdown(result: LikenessResult) -> str:
    """The table of every figure, one row per set of replies."""
    lines = [f"| replies | n | said by {result.person} | C2ST AUC | AUC, memorised left out | memorised | ended | "
             "chars | length KS | emoji | languages | distinct-1 / 2 | Assistant ppl |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in result.rows:
        s = r.style
        ks = "" if r.name == REAL else _num(s.length_ks)
        lines.append(
            f"| {row_label(r.name, result.person)} | {r.replies} | {_pct(r.said_by_person)} | {_num(r.auc)} | "
            f"{_num(r.auc_unmemorised)} | {_pct(r.memorised)} | {_pct(r.finished)} | {s.mean_chars:.0f} | {ks} | "
            f"{_pct(s.emoji_share)} | {_languages(r)} | {s.distinct_1:.2f} / {s.distinct_2:.2f} | "
            f"{_num(r.perplexity)} |")
    return "\n".join(lines) + "\n"


def samples_markdown(result: LikenessResult) -> str:
    """Held-out User turns with the person's real reply and every model's."""
    if not result.samples:
        return ""
    models = [r.name for r in result.rows if r.name not in (REAL, OTHERS_ROW)]
    header = ["User (held out)", f"{result.person} (real)", *(MODEL_LABELS.get(m, m) for m in models)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in result.samples:
        cells = [s["user_turn"], s[REAL], *(s[m] for m in models)]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def likeness_markdown(result: LikenessResult) -> str:
    settings = result.settings
    sampling = ", ".join(f"{k} {settings[k]}" for k in ("temperature", "top_k", "top_p", "max_new_tokens", "seed")
                         if k in settings)
    classes = " / ".join(result.classes)
    return (
        f"## Likeness to {result.person} on held-out chats\n\n"
        f"{result.held_out} held-out replies of {result.person} in {result.sessions} session(s); every model "
        f"answered the same User turns with the same history and sampling ({sampling}).\n\n"
        f"{figures_markdown(result)}\n"
        f"- *said by {result.person}*: share of the replies that a fastText classifier ({classes}), trained on the "
        f"training sessions ({result.training_turns['person']:,} / {result.training_turns['others']:,} / "
        f"{result.training_turns['corpus']:,} texts), attributes to {result.person}.\n"
        f"- *C2ST AUC*: how well a classifier, cross-validated, tells these replies from {result.person}'s real "
        f"ones (0.5: indistinguishable, 1.0: always told apart; blank with fewer than 4 replies); recited training "
        f"messages fool it, hence the column without them.\n"
        f"- *memorised*: replies that repeat a training message verbatim or nearly (MinHash, word-bigram Jaccard); "
        f"*ended*: replies the model ended itself; *length KS*: Kolmogorov–Smirnov distance of the reply lengths to "
        f"{result.person}'s; *TV*: total variation distance of the language shares; *Assistant ppl*: held-out "
        f"Assistant-turn perplexity (sft / lora stages).\n\n"
        f"### Sample replies\n\n{samples_markdown(result)}"
    )


def summary_line(result: LikenessResult) -> str:
    """One line for the run summary: who said it, the two-sample AUCs, memorisation."""
    def name(row: LikenessRow) -> str:
        return "real" if row.name == REAL else short_label(row.name, result.person)

    models = [r for r in result.rows if r.name not in (REAL, OTHERS_ROW)]
    said = ", ".join(f"{name(r)} {r.said_by_person:.0%}" for r in result.rows)
    aucs = ", ".join(f"{name(r)} {_num(r.auc) or 'n/a'} ({_num(r.auc_unmemorised) or 'n/a'})" for r in models)
    memorised = ", ".join(f"{name(r)} {r.memorised:.0%}" for r in result.rows if r.name != OTHERS_ROW)
    return (f"likeness to {result.person} on {result.held_out} held-out replies — said by {result.person}: {said}; "
            f"C2ST AUC (memorised left out): {aucs or 'no model'}; memorised: {memorised}")
