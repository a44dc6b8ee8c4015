"""prefect.yaml: parses, every entrypoint is a flow of ours, every stage has its deployment."""

from __future__ import annotations

import importlib

import yaml

from flows.registry import STAGE_NAMES
from tests.conftest import ROOT


def _deployments() -> list[dict]:
    return yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]


def test_every_entrypoint_resolves_to_a_flow_with_a_config_parameter():
    from prefect import Flow

    for d in _deployments():
        path, attr = d["entrypoint"].split(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        flow = getattr(module, attr)
        assert isinstance(flow, Flow), d["entrypoint"]
        assert "config" in flow.parameters.properties, d["entrypoint"]
        assert d["work_pool"]["name"] in ("chatlike-cpu", "chatlike-gpu")


def test_each_stage_has_a_default_deployment_and_the_pipeline_two():
    from prefect import Flow

    names = set()
    for d in _deployments():
        path, attr = d["entrypoint"].split(":")
        flow: Flow = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), attr)
        names.add(f"{flow.name}/{d['name']}")
    for stage in STAGE_NAMES:
        assert f"{stage}/default" in names, stage
    assert {"pipeline/manual", "pipeline/nightly"} <= names
    nightly = next(d for d in _deployments() if d["name"] == "nightly")
    assert nightly["schedules"][0]["cron"] == "0 3 * * *"
    assert "pretrain" not in nightly["parameters"]["only"] and "sft-data" in nightly["parameters"]["only"]
    assert set(nightly["parameters"]["only"]) <= set(STAGE_NAMES)
