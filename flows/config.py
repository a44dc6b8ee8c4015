"""`PipelineConfig`: the one typed configuration of a chatlike run, loaded from YAML (DESIGN §2).

Every field has a default; unknown keys are errors that name the key's full path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from tasks.dedup import BloomDedupParams, ExactDedupParams, MinhashDedupParams, SuffixArrayDedupParams
from tasks.encode import EncodeParams
from tasks.kenlm_train import KenlmTrainParams
from tasks.langid.stage import LangidFilterParams, LangidParams
from tasks.likeness import PersonaEvalParams
from tasks.params import (
    CleanParams,
    IngestParams,
    RunnerParams,
    StrictModel,
)
from tasks.perplexity.stage import PerplexityFilterParams, PerplexityParams
from tasks.quality.stage import QualityFilterParams, QualitySignalsParams
from tasks.sample import SampleParams
from tasks.tokenizer import TokenizerParams
from tasks.training import LoraParams, PretrainParams, SftDataParams, SftParams


class PerplexityConfig(StrictModel):
    """Tag every document with its KenLM perplexity (cached), then filter by bucket (cheap to re-tune)."""

    enabled: bool = True
    tag: PerplexityParams = Field(default_factory=PerplexityParams)
    filter: PerplexityFilterParams = Field(default_factory=PerplexityFilterParams)


class LangidTrainConfig(StrictModel):
    """An own fastText model for languages the default model lacks (labelled text → `langid-train`)."""

    data: list[str] = Field(default_factory=list, description="Labelled files/folders, or LABEL=PATH entries.")
    owned_labels: list[str] | None = Field(None, description="Labels taken from the own model; default: new ones.")
    epochs: int = Field(25, ge=1)
    dim: int = Field(32, ge=4)
    min_score: float | None = Field(None, ge=0, le=1, description="Default: calibrated per script.")
    calibration_folds: int = Field(3, ge=0)
    seed: int = 0
    threads: int = Field(
        1, ge=1, description="fastText threads per model: 1 is reproducible; more is faster but differs per run."
    )


class LangidConfig(StrictModel):
    """Tag every document's language (cached), then keep languages above a score (cheap to re-tune)."""

    enabled: bool = True
    train: LangidTrainConfig = Field(default_factory=LangidTrainConfig)
    tag: LangidParams = Field(default_factory=LangidParams)
    filter: LangidFilterParams = Field(default_factory=LangidFilterParams)


class QualityConfig(StrictModel):
    """Compute quality signals per document (cached), then filter with per-rule thresholds."""

    enabled: bool = True
    tag: QualitySignalsParams = Field(default_factory=QualitySignalsParams)
    filter: QualityFilterParams = Field(default_factory=QualityFilterParams)


class DedupConfig(StrictModel):
    """Which dedup methods run, in which order (each its own dataset), and each method's settings."""

    methods: list[Literal["exact", "minhash", "bloom", "suffix_array"]] = Field(
        default_factory=lambda: ["exact", "minhash", "suffix_array"]
    )
    exact: ExactDedupParams = Field(default_factory=ExactDedupParams)
    minhash: MinhashDedupParams = Field(default_factory=MinhashDedupParams)
    bloom: BloomDedupParams = Field(default_factory=BloomDedupParams)
    suffix_array: SuffixArrayDedupParams = Field(default_factory=SuffixArrayDedupParams)

    @model_validator(mode="after")
    def _once_each(self) -> DedupConfig:
        if len(set(self.methods)) != len(self.methods):
            raise ValueError("dedup.methods lists a method twice")
        return self


class ConfigError(ValueError):
    """A config file that cannot be read or does not validate; the message names the file and the key."""


class PipelineConfig(StrictModel):
    name: str = Field("default", description="Names the run pointer <data_root>/runs/<name>.json.")
    data_root: str = Field("data", description="Where datasets are written (relative to the working directory).")
    runner: RunnerParams = Field(default_factory=RunnerParams)
    ingest: IngestParams = Field(default_factory=IngestParams)
    clean: CleanParams = Field(default_factory=CleanParams)
    langid: LangidConfig = Field(default_factory=LangidConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)
    kenlm_train: KenlmTrainParams = Field(default_factory=KenlmTrainParams)
    perplexity: PerplexityConfig = Field(default_factory=PerplexityConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    sample: SampleParams = Field(default_factory=SampleParams)
    tokenizer: TokenizerParams = Field(default_factory=TokenizerParams)
    encode: EncodeParams = Field(default_factory=EncodeParams)
    pretrain: PretrainParams = Field(default_factory=PretrainParams)
    sft_data: SftDataParams = Field(default_factory=SftDataParams)
    sft: SftParams = Field(default_factory=SftParams)
    lora: LoraParams = Field(default_factory=LoraParams)
    persona_eval: PersonaEvalParams = Field(default_factory=PersonaEvalParams)

    @model_validator(mode="after")
    def _token_ids_fit(self) -> PipelineConfig:
        # Caught here, not after the tokenizer has been trained.
        if self.encode.dtype == "uint16" and self.tokenizer.vocab_size > 65_536:
            raise ValueError(f"encode.dtype uint16 holds ids below 65,536 but tokenizer.vocab_size is "
                             f"{self.tokenizer.vocab_size:,}: use dtype uint32 or auto")
        return self


def _format_errors(source: str, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"{source}: unknown key '{key}'")
        elif e["type"] == "value_error" and not e["loc"]:
            lines.append(f"{source}: {e['msg'].removeprefix('Value error, ')}")
        else:
            lines.append(f"{source}: '{key}': {e['msg'].removeprefix('Value error, ')}")
    return "; ".join(lines)


def load_config(source: str | os.PathLike | PipelineConfig | dict) -> PipelineConfig:
    """A PipelineConfig from a YAML path, a dict, or an existing config (returned as is)."""
    if isinstance(source, PipelineConfig):
        return source
    if isinstance(source, dict):
        try:
            return PipelineConfig.model_validate(source)
        except ValidationError as e:
            raise ConfigError(_format_errors("config", e)) from None
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}")
    data.setdefault("name", path.stem)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_format_errors(str(path), e)) from None
