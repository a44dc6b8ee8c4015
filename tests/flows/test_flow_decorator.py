"""Every flow's parameter schema, built once per signature (flows/flow_decorator.py), is what Prefect builds."""

from __future__ import annotations

import pytest
from prefect.utilities.callables import parameter_schema as prefects_parameter_schema

from flows.pipeline import pipeline_flow
from flows.registry import FLOWS


@pytest.mark.parametrize("name", [*FLOWS, "pipeline"])
def test_each_flows_parameter_schema_is_prefects(name):
    flow = pipeline_flow if name == "pipeline" else FLOWS[name]
    assert flow.parameters == prefects_parameter_schema(flow.fn)


def test_flows_sharing_a_signature_get_their_own_copy_of_the_schema():
    clean, sample = FLOWS["clean"], FLOWS["sample"]
    assert clean.parameters == sample.parameters and clean.parameters is not sample.parameters
    clean.parameters.properties["config"]["title"] = "changed"
    try:
        assert sample.parameters.properties["config"]["title"] != "changed"
    finally:
        clean.parameters.properties["config"]["title"] = sample.parameters.properties["config"]["title"]
