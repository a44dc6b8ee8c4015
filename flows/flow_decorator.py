"""Prefect's `flow` decorator for chatlike's flows, each distinct parameter schema computed once per process.

Prefect builds a flow's OpenAPI parameter schema when the function is decorated (`Flow.__init__`), and for a
`config: PipelineConfig | str` parameter that is the JSON schema of the whole config, built twice: about 0.2 s a
flow, 3.5 s for our 21 flows, in every process that imports them (each `chatlike` command, each worker, each
subprocess of the tests). The schema depends only on the parameters (names, kinds, annotations, defaults) and on
what the docstring says of them, and most stage flows share one signature: each distinct one is built once and
copied. Deployments are not concerned: Prefect builds their schema with its own function, from the entrypoint.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import prefect.flows
from prefect import flow
from prefect.utilities.callables import ParameterSchema, generate_parameter_schema, parameter_docstrings

__all__ = ["flow", "parameter_schema"]

_SCHEMAS: dict[tuple, ParameterSchema] = {}
_prefect_parameter_schema = prefect.utilities.callables.parameter_schema


def parameter_schema(fn: Callable[..., Any]) -> ParameterSchema:
    """What `prefect.utilities.callables.parameter_schema(fn)` returns, from a cache keyed by what it reads."""
    try:
        signature = inspect.signature(fn, eval_str=True)
    except (NameError, TypeError):
        return _prefect_parameter_schema(fn)
    docstrings = parameter_docstrings(inspect.getdoc(fn))
    key = (tuple((p.name, p.kind, p.annotation, p.default) for p in signature.parameters.values()),
           tuple(sorted(docstrings.items())))
    try:
        schema = _SCHEMAS.get(key)
    except TypeError:  # an unhashable default or annotation: not cached
        return generate_parameter_schema(signature, docstrings)
    if schema is None:
        schema = _SCHEMAS[key] = generate_parameter_schema(signature, docstrings)
    return schema.model_copy(deep=True)


prefect.flows.parameter_schema = parameter_schema  # the name `Flow.__init__` calls
