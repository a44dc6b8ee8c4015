"""The plan of every stage, stated once and computed without Prefect: what a stage reads (every input dataset
and raw file), its parameters and its version (read from the code it versions), hence its fingerprint and the
directory of its output. Flows, the CLI and tests all ask a `Planner`; nothing else computes a fingerprint.

A `Planner` plans the stages of one config lazily and remembers them, following inputs from the raw files
down. A stage run on a given dataset (a flow's `input_path`) is planned with that dataset in place of the one
its upstream stage would produce (`given`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.config import PipelineConfig
from storage.checkpoints import CONFIG_NAME, WEIGHTS_NAME, checkpoint_tokenizer, resolve_checkpoint
from storage.dataset import DatasetWriter, InputRef, dataset_dir, find_dataset, is_dataset, read_manifest
from storage.fingerprint import fingerprint, hash_file, hash_file_once
from tasks import clean, encode, ingest, kenlm_train, sample, sft_data, tokenizer, training
from tasks.dedup import bloom, exact, minhash, suffix_array
from tasks.langid import stage as langid
from tasks.langid import train as langid_train
from tasks.likeness import stage as likeness
from tasks.perplexity import stage as perplexity
from tasks.quality import stage as quality

# The version of the dedup chain's wiring, before each method's own version (`1.<method version>`).
DEDUP_CHAIN_VERSION = "1"
DEDUP_METHOD_MODULES = {"exact": exact, "minhash": minhash, "bloom": bloom, "suffix_array": suffix_array}
DEDUP_STAGES = {"exact": "dedup-exact", "minhash": "dedup-minhash", "bloom": "dedup-bloom",
                "suffix_array": "dedup-suffix-array"}
CHAT_STAGES = ("sft-data", "sft", "lora", "persona-eval")
EVALUATED_MODELS = ("sft", "lora")  # compared with the base model by persona-eval, those that exist
PRETRAIN_BASE = "pretrain"  # sft.base / lora.base: fine-tune this pipeline's own pretrain checkpoint
# Training settings that change how, not what, is trained: left out of a run's fingerprint.
HOW_NOT_WHAT = ("device", "nproc", "log_interval", "compile")


class MissingInputError(ValueError):
    """A stage's input dataset has not been built for this config yet."""


@dataclass(frozen=True)
class StagePlan:
    """Everything that determines a stage's output, known before any work is done."""

    stage: str
    stage_version: str
    params: dict
    inputs: tuple[InputRef, ...]
    fingerprint: str
    data_root: str
    details: Mapping[str, Any] = field(default_factory=dict, compare=False)  # what planning learned (ingest files)

    @property
    def path(self) -> str:
        return str(dataset_dir(self.data_root, self.stage, self.fingerprint))

    @property
    def ref(self) -> InputRef:
        return InputRef(self.stage, self.fingerprint, self.path)

    @property
    def existing(self) -> Path | None:
        return find_dataset(self.data_root, self.stage, self.fingerprint)

    def input(self, stage: str) -> InputRef:
        """The input dataset of `stage` (the first one when several)."""
        for ref in self.inputs:
            if ref.stage == stage:
                return ref
        raise KeyError(f"{self.stage} has no input from '{stage}'")

    def writer(self) -> DatasetWriter:
        return DatasetWriter(self.data_root, self.stage, self.stage_version, self.fingerprint, self.params,
                             list(self.inputs))


def make_plan(data_root: str, stage: str, stage_version: str, params: dict, inputs: list[InputRef],
              details: Mapping[str, Any] | None = None) -> StagePlan:
    """A stage's plan: its fingerprint covers the inputs' fingerprints and every raw file's content hash."""
    fp = fingerprint(
        stage,
        stage_version,
        params,
        input_fingerprints=[i.fingerprint for i in inputs if i.stage != "raw"],
        raw_hashes=[i.fingerprint for i in inputs if i.stage == "raw"],
    )
    return StagePlan(stage, stage_version, params, tuple(inputs), fp, data_root, details or {})


def raw_ref(path: str | os.PathLike, sha256: str | None = None) -> InputRef:
    """A raw file as an input: its content hash is its fingerprint."""
    return InputRef("raw", sha256 or hash_file(path), str(Path(path).resolve()))


def input_ref(path: str | os.PathLike) -> InputRef:
    """A published dataset as an input (its manifest says which stage and fingerprint it is)."""
    m = read_manifest(path)
    return InputRef(stage=m.stage, fingerprint=m.fingerprint, path=str(Path(path)))


# ------------------------------------------------------------------------------------------- conditions


def chat_stages_active(cfg: PipelineConfig) -> bool:
    """sft-data, sft and lora run once the config names the person to imitate."""
    return bool(cfg.sft_data.target_names())


def kenlm_configured(cfg: PipelineConfig) -> bool:
    return bool(cfg.kenlm_train.references or cfg.kenlm_train.reference_dataset)


def perplexity_active(cfg: PipelineConfig) -> bool:
    tag = cfg.perplexity.tag
    return cfg.perplexity.enabled and (kenlm_configured(cfg) or bool(tag.models) or bool(tag.models_dir))


def kenlm_models_used(cfg: PipelineConfig) -> bool:
    """Perplexity scores with kenlm-train's models (not with models named in `perplexity.tag`)."""
    tag = cfg.perplexity.tag
    return kenlm_configured(cfg) and not tag.models and not tag.models_dir


def own_langid_model_trained(cfg: PipelineConfig) -> bool:
    """langid consults the model of the langid-train stage (not one named by path)."""
    return bool(cfg.langid.train.data) and not cfg.langid.tag.own_model_path


def perplexity_tag_params(cfg: PipelineConfig, models_dir: str | None) -> perplexity.PerplexityParams:
    """The tag parameters the shard tasks get: kenlm-train's models folder when those models are used."""
    params = cfg.perplexity.tag
    if models_dir is not None and kenlm_models_used(cfg):
        params = params.model_copy(update={"models_dir": models_dir})
    return params


def langid_training_files(cfg: PipelineConfig) -> list[Path]:
    files: list[Path] = []
    for entry in cfg.langid.train.data:
        path = Path(entry.split("=", 1)[1] if "=" in entry and not Path(entry).exists() else entry)
        if path.is_dir():
            files += sorted(f for f in path.rglob("*") if f.is_file() and not f.name.startswith("."))
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"langid.train.data: '{entry}' does not exist")
    return files


def training_fingerprint_params(params: training.TrainingParams) -> dict:
    fp = params.fingerprint_params()
    for key in (*HOW_NOT_WHAT, "base"):  # the base model is an input, fingerprinted by content
        fp.pop(key, None)
    if fp.get("model_dropout", 0) is None:  # the base's own dropout: the base is fingerprinted by content
        del fp["model_dropout"]
    return fp


def chat_base(cfg: PipelineConfig) -> str:
    """What sft and lora fine-tune: 'pretrain' (this pipeline's checkpoint) or the folder of an imported model.
    lora.base defaults to sft.base; the two must agree, since sft-data encodes the chats with one tokenizer."""
    sft_base = cfg.sft.base.strip()
    lora_base = sft_base if cfg.lora.base is None else cfg.lora.base.strip()
    if not sft_base or not lora_base:
        raise ValueError("sft.base / lora.base is empty: use 'pretrain' or the folder of an imported model")
    same = sft_base == lora_base or (PRETRAIN_BASE not in (sft_base, lora_base)
                                     and Path(sft_base).resolve() == Path(lora_base).resolve())
    if not same:
        raise ValueError(f"sft.base ({sft_base!r}) and lora.base ({lora_base!r}) differ: both fine-tune from one "
                         f"base, because sft-data encodes the chats with that base's tokenizer")
    return sft_base


def external_base(cfg: PipelineConfig) -> Path | None:
    """The imported checkpoint sft and lora start from, or None when they start from pretrain."""
    base = chat_base(cfg)
    if base == PRETRAIN_BASE:
        return None
    try:
        folder = resolve_checkpoint(base)
    except FileNotFoundError as exc:
        raise ValueError(f"sft.base: {exc} (import one with: chatlike model import HF_DIR --out DIR)") from None
    for name in (CONFIG_NAME, WEIGHTS_NAME):
        if not (folder / name).is_file():
            raise ValueError(f"sft.base: {folder} has no {name}: not a chatlike checkpoint "
                             f"(import one with: chatlike model import HF_DIR --out DIR)")
    return folder


def base_tokenizer_ref(base: Path) -> InputRef:
    try:
        return raw_ref(checkpoint_tokenizer(base))
    except (ValueError, FileNotFoundError) as exc:
        raise ValueError(f"sft.base: {exc}") from None


def base_model_refs(base: Path) -> list[InputRef]:
    """An imported base as inputs: its config and weights, by content."""
    return [raw_ref(base / CONFIG_NAME), raw_ref(base / WEIGHTS_NAME, hash_file_once(base / WEIGHTS_NAME))]


# ----------------------------------------------------------------------------------------------- planner


class Planner:
    """The plans of one config's stages, computed on demand, each once."""

    def __init__(self, cfg: PipelineConfig, given: Mapping[str, str | os.PathLike | None] | None = None):
        self.cfg = cfg
        self._given = {stage: str(path) for stage, path in (given or {}).items() if path}
        self._plans: dict[str, StagePlan | None] = {}

    def plan(self, stage: str) -> StagePlan | None:
        """The plan of the dataset `stage` makes under this config; None when it makes none."""
        if stage not in self._plans:
            recipe = RECIPES.get(stage)
            if recipe is None:
                raise KeyError(f"no stage named '{stage}'; the stages are: {', '.join(RECIPES)}")
            self._plans[stage] = recipe(self)
        return self._plans[stage]

    def ref(self, stage: str) -> InputRef | None:
        """The dataset that stands for `stage`'s output: a given one, the planned one, or — for a stage that is
        switched off and passes its input through — its input's."""
        if stage in self._given:
            return input_ref(self._given[stage])
        plan = self.plan(stage)
        if plan is not None:
            return plan.ref
        through = PASSES_THROUGH.get(stage)
        return self.ref(through) if through else None

    def require_base(self, reader: str) -> None:
        """The model `reader` fine-tunes or evaluates must exist: pretrain's run, unless the base is imported."""
        if external_base(self.cfg) is None:
            self.require("pretrain", reader)

    def require(self, stage: str, reader: str) -> InputRef:
        """`stage`'s output, which `reader` reads: it must exist."""
        ref = self.ref(stage)
        if ref is None:
            raise MissingInputError(_makes_nothing(self.cfg, stage))
        if not is_dataset(ref.path):
            raise MissingInputError(
                f"'{reader}' reads the output of '{stage}', which does not exist yet for config '{self.cfg.name}' "
                f"(expected {ref.path}); run: chatlike run --config <config> --stop-after {stage}"
            )
        return ref


def _makes_nothing(cfg: PipelineConfig, stage: str) -> str:
    hint = " (sft-data, sft, lora and persona-eval need sft_data.target_author)" if stage in CHAT_STAGES else ""
    if stage == "pretrain" and (base := external_base(cfg)) is not None:
        hint = f" (sft and lora fine-tune the imported model {base}; nothing reads pretrain)"
    return f"'{stage}' makes no dataset under config '{cfg.name}'{hint}"


def _ingest(p: Planner) -> StagePlan:
    files = ingest.resolve_inputs(p.cfg.ingest, exclude=[p.cfg.data_root])
    params = p.cfg.ingest.fingerprint_params()
    # Paths are where the files were found; the fingerprint depends on their content and kind only.
    params["inputs"] = [{"kind": f.kind, "source": f.source} for f in files]
    inputs = [raw_ref(f.path, f.sha256) for f in files]
    return make_plan(p.cfg.data_root, ingest.STAGE, ingest.STAGE_VERSION, params, inputs, {"files": files})


def _clean(p: Planner) -> StagePlan | None:
    src = p.ref("ingest")
    return make_plan(p.cfg.data_root, clean.STAGE, clean.STAGE_VERSION, p.cfg.clean.fingerprint_params(), [src])


def _langid_train(p: Planner) -> StagePlan | None:
    cfg = p.cfg
    if not cfg.langid.train.data:
        return None
    raw = [raw_ref(f) for f in langid_training_files(cfg)]
    params = {**cfg.langid.train.fingerprint_params(), "recipe": langid_train.TRAINING_RECIPE}
    return make_plan(cfg.data_root, "langid-train", langid_train.STAGE_VERSION, params, raw)


def _langid_tags(p: Planner) -> StagePlan | None:
    cfg = p.cfg
    src = p.ref("clean")
    if not cfg.langid.enabled or src is None:
        return None
    inputs, params = [src], cfg.langid.tag.fingerprint_params()
    if own_langid_model_trained(cfg):
        own = p.ref("langid-train")
        inputs.append(own)
        params["own_model"] = own.fingerprint  # shown in the manifest's params: which trained model tagged
    return make_plan(cfg.data_root, "langid-tags", langid.STAGE_VERSION, params, inputs)


def _filter_of(tags: str, stage: str, version: Callable[[], str], params: Callable[[PipelineConfig], dict]):
    def recipe(p: Planner) -> StagePlan | None:
        src = p.ref(tags)
        if src is None:
            return None
        return make_plan(p.cfg.data_root, stage, version(), params(p.cfg), [src])

    return recipe


def _quality_tags(p: Planner) -> StagePlan | None:
    cfg = p.cfg
    src = p.ref("langid")
    if not cfg.quality.enabled or src is None:
        return None
    return make_plan(cfg.data_root, "quality-tags", quality.STAGE_VERSION, cfg.quality.tag.fingerprint_params(),
                     [src])


def _kenlm_train(p: Planner) -> StagePlan | None:
    cfg = p.cfg
    if not kenlm_configured(cfg):
        return None
    sources = kenlm_train.reference_sources(cfg.kenlm_train)
    raw = [raw_ref(path) for lang in sorted(sources) for path in sources[lang]]
    return make_plan(cfg.data_root, kenlm_train.STAGE, kenlm_train.STAGE_VERSION,
                     cfg.kenlm_train.fingerprint_params(), raw)


def _perplexity_tags(p: Planner) -> StagePlan | None:
    cfg = p.cfg
    src = p.ref("quality")
    if not perplexity_active(cfg) or src is None:
        return None
    if kenlm_models_used(cfg):
        models = [p.ref("kenlm-train")]
    else:  # the model files named in the config, by content
        models = [raw_ref(path) for _, path in sorted(perplexity.resolve_models(cfg.perplexity.tag).items())]
    params = cfg.perplexity.tag.fingerprint_params()
    params.pop("models_dir", None)  # the models are inputs, fingerprinted by content, not by path
    params.pop("models", None)
    return make_plan(cfg.data_root, "perplexity-tags", perplexity.STAGE_VERSION, params, [src, *models])


def _dedup_method(method: str):
    def recipe(p: Planner) -> StagePlan | None:
        src = p.ref(dedup_method_input(p.cfg, method))
        if src is None:
            return None
        # The method's own version: a change in how it decides makes new datasets instead of reusing old ones.
        version = f"{DEDUP_CHAIN_VERSION}.{DEDUP_METHOD_MODULES[method].STAGE_VERSION}"
        params = getattr(p.cfg.dedup, method).fingerprint_params()
        return make_plan(p.cfg.data_root, DEDUP_STAGES[method], version, params, [src])

    return recipe


def dedup_method_input(cfg: PipelineConfig, method: str) -> str:
    """The stage whose output a dedup method reads: perplexity's for the first, else the previous method's."""
    methods = list(cfg.dedup.methods)
    i = methods.index(method) if method in methods else 0
    return "perplexity" if i == 0 else DEDUP_STAGES[methods[i - 1]]


def _dedup(p: Planner) -> StagePlan | None:
    """The last method of the chain (None, passing its input through, when no method is configured)."""
    methods = list(p.cfg.dedup.methods)
    return p.plan(DEDUP_STAGES[methods[-1]]) if methods else None


def _after(upstream: str, stage: str, version: Callable[[], str], params: Callable[[PipelineConfig], dict]):
    """A stage reading the dataset of `upstream`, made when that one is."""

    def recipe(p: Planner) -> StagePlan | None:
        src = p.ref(upstream)
        if src is None:
            return None
        return make_plan(p.cfg.data_root, stage, version(), params(p.cfg), [src])

    return recipe


def _encode(p: Planner) -> StagePlan | None:
    corpus, tok = p.ref("dedup"), p.ref("tokenizer")  # encode reads the whole corpus, not the sample
    if corpus is None or tok is None:
        return None
    return make_plan(p.cfg.data_root, encode.STAGE, encode.STAGE_VERSION, p.cfg.encode.fingerprint_params(),
                     [corpus, tok])


def sft_data_params(cfg: PipelineConfig) -> dict:
    params = cfg.sft_data.fingerprint_params()
    if cfg.sft_data.clean:
        params["clean_rules"] = cfg.clean.rules.model_dump(mode="json")
    return params


def _sft_data(p: Planner) -> StagePlan | None:
    if not chat_stages_active(p.cfg):
        return None
    base = external_base(p.cfg)
    # the examples are encoded with the tokenizer of the model they will fine-tune
    ingest_ref, tok = p.ref("ingest"), base_tokenizer_ref(base) if base else p.ref("tokenizer")
    if ingest_ref is None or tok is None:
        return None
    return make_plan(p.cfg.data_root, sft_data.STAGE, sft_data.STAGE_VERSION, sft_data_params(p.cfg),
                     [ingest_ref, tok])


def _pretrain(p: Planner) -> StagePlan | None:
    # The tokenizer a run reads is the one its data was encoded with: an input of encode (and of sft-data).
    tokens = p.ref("encode")
    if tokens is None or external_base(p.cfg) is not None:
        return None
    return make_plan(p.cfg.data_root, "pretrain", training.STAGE_VERSION,
                     training_fingerprint_params(p.cfg.pretrain), [tokens])


def _finetune(stage: str):
    def recipe(p: Planner) -> StagePlan | None:
        if not chat_stages_active(p.cfg):
            return None
        base = external_base(p.cfg)
        base_refs = base_model_refs(base) if base else [p.ref("pretrain")]
        refs = [*base_refs, p.ref("sft-data")]
        if any(r is None for r in refs):
            return None
        params = training_fingerprint_params(getattr(p.cfg, stage))
        return make_plan(p.cfg.data_root, stage, training.STAGE_VERSION, params, refs,
                         {"base": str(base) if base else refs[0].path})

    return recipe


def _persona_eval(p: Planner) -> StagePlan | None:
    """Likeness of the base, SFT and LoRA models to the person on sft-data's held-out sessions. The fine-tuned
    models are inputs once they exist (one not built, e.g. lora, is left out of the comparison; building it later
    makes a new dataset). The "not this chat" texts come from ingest's documents, which both roads have."""
    cfg = p.cfg
    if not chat_stages_active(cfg):
        return None
    base = external_base(cfg)
    data, corpus = p.ref("sft-data"), p.ref("ingest")
    base_refs = base_model_refs(base) if base else [p.ref("pretrain")]
    if data is None or corpus is None or any(r is None for r in base_refs):
        return None
    base_path = str(base) if base else base_refs[0].path
    models: dict[str, dict] = {"base": {"checkpoint": base_path, "adapter": None}}
    refs = [data, *base_refs]
    for stage in EVALUATED_MODELS:
        ref = p.ref(stage)
        if ref is not None and is_dataset(ref.path):
            refs.append(ref)
            models[stage] = ({"checkpoint": base_path, "adapter": ref.path} if stage == "lora"
                             else {"checkpoint": ref.path, "adapter": None})
    refs.append(corpus)
    tag = cfg.langid.tag
    if own_langid_model_trained(cfg):
        own = p.ref("langid-train")
        refs.append(own)
        tag = tag.model_copy(update={"own_model_path": str(Path(own.path) / "model.bin")})
    params = {**cfg.persona_eval.fingerprint_params(), "langid": cfg.langid.tag.fingerprint_params()}
    if cfg.sft_data.clean:
        params["clean_rules"] = cfg.clean.rules.model_dump(mode="json")
    return make_plan(cfg.data_root, likeness.STAGE, likeness.STAGE_VERSION, params, refs,
                     {"models": models, "langid": tag})


# Every dataset a config can make, in DAG order: the pipeline's stages and the sub-datasets of the filters
# (signals, then thresholds) and of dedup (one dataset per method). Versions are read when a plan is made, from
# the module whose code they version.
RECIPES: dict[str, Callable[[Planner], StagePlan | None]] = {
    "ingest": _ingest,
    "clean": _clean,
    "langid-train": _langid_train,
    "langid-tags": _langid_tags,
    "langid": _filter_of("langid-tags", "langid", lambda: langid.FILTER_STAGE_VERSION,
                         lambda cfg: cfg.langid.filter.fingerprint_params()),
    "quality-tags": _quality_tags,
    "quality": _filter_of("quality-tags", "quality", lambda: quality.FILTER_STAGE_VERSION,
                          lambda cfg: cfg.quality.filter.fingerprint_params()),
    "kenlm-train": _kenlm_train,
    "perplexity-tags": _perplexity_tags,
    "perplexity": _filter_of("perplexity-tags", "perplexity", lambda: perplexity.STAGE_VERSION,
                             lambda cfg: cfg.perplexity.filter.fingerprint_params()),
    **{name: _dedup_method(method) for method, name in DEDUP_STAGES.items()},
    "dedup": _dedup,
    "sample": _after("dedup", sample.STAGE, lambda: sample.STAGE_VERSION, lambda cfg: cfg.sample.fingerprint_params()),
    "tokenizer": _after("sample", tokenizer.STAGE, lambda: tokenizer.STAGE_VERSION,
                        lambda cfg: cfg.tokenizer.fingerprint_params()),
    "encode": _encode,
    "pretrain": _pretrain,
    "sft-data": _sft_data,
    "sft": _finetune("sft"),
    "lora": _finetune("lora"),
    "persona-eval": _persona_eval,
}

# A stage that is switched off stands for its input (documents pass through it unchanged).
PASSES_THROUGH = {"langid": "clean", "quality": "langid", "perplexity": "quality", "dedup": "perplexity"}

# The pipeline's stages in DAG order, each with the stage whose output its flow takes as `input_path`.
UPSTREAM: dict[str, str | None] = {
    "ingest": None,
    "clean": "ingest",
    "langid-train": None,
    "langid": "clean",
    "quality": "langid",
    "kenlm-train": None,
    "perplexity": "quality",
    "dedup": "perplexity",
    "sample": "dedup",
    "tokenizer": "sample",
    "encode": "tokenizer",
    "pretrain": "encode",
    "sft-data": "tokenizer",
    "sft": "sft-data",
    "lora": "sft-data",
    "persona-eval": "sft-data",
}
STAGE_NAMES = tuple(UPSTREAM)


def upstream_of(cfg: PipelineConfig, stage: str) -> str | None:
    """The stage whose output the flow of `stage` takes as `input_path` under this config: sft-data reads the
    messages of ingest (and an imported base's tokenizer) instead of the tokenizer stage's output."""
    if stage == "sft-data" and chat_stages_active(cfg) and external_base(cfg) is not None:
        return "ingest"
    return UPSTREAM[check_stage(stage)]


class UnknownStageError(ValueError):
    pass


def check_stage(name: str) -> str:
    if name not in UPSTREAM:
        raise UnknownStageError(f"no stage named '{name}'; the stages are: {', '.join(STAGE_NAMES)}")
    return name


def select_stages(start_at: str | None = None, stop_after: str | None = None,
                  only: list[str] | None = None) -> list[str]:
    """The stages to run, in DAG order, honouring --start-at / --stop-after / --only."""
    for name in [start_at, stop_after, *(only or [])]:
        if name is not None:
            check_stage(name)
    if only:
        return [s for s in STAGE_NAMES if s in only]
    names = list(STAGE_NAMES)
    first = names.index(start_at) if start_at else 0
    last = names.index(stop_after) if stop_after else len(names) - 1
    if first > last:
        raise ValueError(f"--start-at {start_at} comes after --stop-after {stop_after}")
    return names[first : last + 1]


# ------------------------------------------------------------------------------------- what flows call


def plan_stage(cfg: PipelineConfig, stage: str,
               given: Mapping[str, str | os.PathLike | None] | None = None) -> StagePlan | None:
    """The plan of `stage`, reading the datasets `given` by stage name (a flow's `input_path`) where given."""
    return Planner(cfg, given).plan(stage)


def planned_ref(cfg: PipelineConfig, stage: str) -> InputRef | None:
    """The dataset `stage` produces (or passes through) under this config; it may not exist yet."""
    return Planner(cfg).ref(stage)


def planned_output(cfg: PipelineConfig, stage: str) -> tuple[str, bool]:
    """(dataset path of `stage` under this config, whether it exists)."""
    ref = planned_ref(cfg, stage)
    if ref is None:
        raise MissingInputError(_makes_nothing(cfg, stage))
    return ref.path, is_dataset(ref.path)


def upstream_dataset(cfg: PipelineConfig, stage: str) -> str:
    """The existing dataset the flow of `stage` reads when run on its own (its upstream stage's output)."""
    up = upstream_of(cfg, stage)
    assert up is not None, f"stage {stage} has no upstream"
    return Planner(cfg).require(up, stage).path


def flow_planner(cfg: PipelineConfig, stage: str, input_path: str | os.PathLike | None = None) -> Planner:
    """The planner a stage's flow uses: it reads `input_path` if given, else its upstream stage's planned
    output, which must exist."""
    up = upstream_of(cfg, stage)
    if up is None:
        return Planner(cfg)
    return Planner(cfg, {up: input_path or Planner(cfg).require(up, stage).path})
