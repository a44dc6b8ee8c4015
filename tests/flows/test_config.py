"""PipelineConfig: strict YAML loading with errors that name the key, defaults, the demo config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flows.config import ConfigError, PipelineConfig, load_config
from tests.conftest import ROOT


def test_every_stage_has_defaults():
    cfg = PipelineConfig()
    assert cfg.langid.filter.min_score == 0.65
    assert (cfg.dedup.minhash.bands, cfg.dedup.minhash.rows, cfg.dedup.minhash.ngram) == (14, 8, 5)
    assert cfg.dedup.bloom.error_rate == 0.01 and cfg.dedup.suffix_array.min_bytes == 100
    assert cfg.dedup.methods == ["exact", "minhash", "suffix_array"]
    assert cfg.perplexity.filter.keep_buckets == ["head", "middle"] and cfg.kenlm_train.order == 5
    assert cfg.sample.fraction == 0.02 and cfg.tokenizer.vocab_size == 16384 and cfg.encode.val_fraction == 0.005


def test_unknown_key_is_an_error_naming_its_path(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("clean:\n  rules:\n    whitespace: true\n    emojis: false\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: unknown key 'clean\.rules\.emojis'"):
        load_config(p)


def test_wrong_type_names_file_and_key(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("langid:\n  min_score: lots\n")
    with pytest.raises(ConfigError, match=r"'langid\.min_score'"):
        load_config(p)


def test_malformed_yaml_names_the_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\ningest:\n  inputs: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:\d+:\d+: not valid YAML"):
        load_config(p)


def test_missing_config_and_non_mapping(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")
    p = tmp_path / "list.yaml"
    p.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(p)


def test_name_defaults_to_file_stem_and_dask_needs_an_address(tmp_path):
    p = tmp_path / "nightly-web.yaml"
    p.write_text("{}\n")
    assert load_config(p).name == "nightly-web"
    p.write_text("runner: {kind: dask}\n")
    with pytest.raises(ConfigError, match="dask_address"):
        load_config(p)


def test_demo_config_uses_only_the_projects_own_examples():
    cfg = load_config(ROOT / "configs" / "demo.yaml")
    assert cfg.name == "demo"
    for spec in cfg.ingest.inputs:
        assert spec.path.startswith("examples/"), spec.path
        assert "shared" not in spec.path
    raw = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    assert "../" not in str(raw)
    for spec in cfg.ingest.inputs:
        matches = list(ROOT.glob(spec.path)) if "*" in spec.path else [ROOT / spec.path]
        assert matches and all(Path(m).exists() for m in matches), spec.path


def test_token_dtype_too_small_for_the_vocabulary_is_a_config_error(tmp_path):
    p = tmp_path / "big.yaml"
    p.write_text("tokenizer:\n  vocab_size: 70000\nencode:\n  dtype: uint16\n")
    with pytest.raises(ConfigError, match=r"big.yaml: encode.dtype uint16 .* tokenizer.vocab_size is 70,000"):
        load_config(p)
