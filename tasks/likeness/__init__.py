"""The `persona-eval` stage: how much the base, SFT and LoRA models chat like the person, on held-out sessions.

`texts` reads the held-out turns, the training turns and corpus snippets; `classifiers` holds the fastText
who-said-it classifier and the classifier two-sample test; `memorisation` finds replies that repeat a training
message (MinHash); `style` compares lengths, emoji, languages and distinct-n; `stage` measures it all and writes
the dataset's files; `report` holds the figures and renders them as tables. See README.md beside this file.
"""

from tasks.likeness.classifiers import (
    ClassifierParams,
    c2st_auc,
    roc_auc,
    train_classifier,
    train_who_said_it,
)
from tasks.likeness.memorisation import MemorisationParams, MemorisedMatch, TrainingMessageIndex
from tasks.likeness.report import LikenessResult, LikenessRow
from tasks.likeness.stage import (
    STAGE,
    STAGE_VERSION,
    ModelReplies,
    PersonaEvalParams,
    measure_likeness,
    write_likeness,
)
from tasks.likeness.style import distinct_n, emoji_share, ks_distance, style_stats
from tasks.likeness.texts import ChatTurns, HeldOutTurn, corpus_snippets, read_chat_turns, read_held_out

__all__ = [
    "STAGE", "STAGE_VERSION", "ChatTurns", "ClassifierParams", "HeldOutTurn", "LikenessResult", "LikenessRow",
    "MemorisationParams", "MemorisedMatch", "ModelReplies", "PersonaEvalParams", "TrainingMessageIndex",
    "c2st_auc", "corpus_snippets", "distinct_n", "emoji_share", "ks_distance", "measure_likeness",
    "read_chat_turns", "read_held_out", "roc_auc", "style_stats", "train_classifier", "train_who_said_it",
    "write_likeness",
]
