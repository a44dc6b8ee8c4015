"""The `langid` stage: fastText language tags on every document, a filter on them, and own models.

`model` loads and combines fastText models, `train` trains an own model from labelled text, `stage` holds the
params models and the shard functions the flows map over Parquet parts.
"""

from tasks.langid.model import (
    UNDETERMINED,
    CombinedPredictor,
    FastTextModel,
    LanguageGuess,
    LanguagePredictor,
    check_fasttext_file,
    default_model_path,
    load_fasttext_model,
    normalize_for_own_model,
)
from tasks.langid.stage import (
    FILTER_SUMMARY,
    STAGE,
    STAGE_VERSION,
    TAG_SUMMARY,
    LangidFilterParams,
    LangidParams,
    filter_langid_shard,
    langid_reasons,
    tag_langid_shard,
)
from tasks.langid.train import (
    TEXT_COLUMNS,
    LabelledText,
    LangidTrainMetrics,
    collect_training_data,
    read_labelled_file,
    train_langid_model,
)

__all__ = [
    "STAGE",
    "STAGE_VERSION",
    "TAG_SUMMARY",
    "FILTER_SUMMARY",
    "TEXT_COLUMNS",
    "UNDETERMINED",
    "CombinedPredictor",
    "FastTextModel",
    "LabelledText",
    "LangidFilterParams",
    "LangidParams",
    "LangidTrainMetrics",
    "LanguageGuess",
    "LanguagePredictor",
    "check_fasttext_file",
    "collect_training_data",
    "default_model_path",
    "filter_langid_shard",
    "langid_reasons",
    "load_fasttext_model",
    "normalize_for_own_model",
    "read_labelled_file",
    "tag_langid_shard",
    "train_langid_model",
]
