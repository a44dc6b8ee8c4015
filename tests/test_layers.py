"""The layers of DESIGN §1 hold: no module imports a layer above its own, and no import cycle between modules.

Imports are read from the source (every `import`, also those inside functions), so a cycle hidden in a
function-level import counts as much as one at the top of a file.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("storage", "tasks", "model", "flows")

# What each layer may import besides the standard library and itself.
ALLOWED = {
    "storage": {"numpy", "pyarrow", "tokenizers"},
    "tasks": {"storage", "numpy", "pyarrow", "tokenizers", "pydantic", "xxhash", "datasketch", "pybloom_live",
              "pydivsufsort", "fasttext", "kenlm", "fastwarc", "resiliparse", "charset_normalizer"},
    "model": {"storage", "torch", "numpy", "safetensors", "peft", "matplotlib", "tokenizers", "transformers", "gguf",
              "bitsandbytes"},
    "flows": {"storage", "tasks", "model", "prefect", "distributed", "pydantic", "yaml", "typer", "rich",
              "matplotlib", "fastapi", "uvicorn"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _project_modules() -> dict[str, Path]:
    return {_module_name(f): f for pkg in PACKAGES for f in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported name, line) for every absolute import of the file; `from a import b` names `a.b` when that
    is a module of the project."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            found += [(s, node.lineno) for s in subs if s in modules] or [(node.module, node.lineno)]
    return found


def _graph() -> dict[str, set[str]]:
    modules = _project_modules()
    return {name: {imp for imp, _ in _imports(path, modules) if imp in modules and imp != name}
            for name, path in modules.items()}


def test_no_module_imports_a_layer_it_may_not():
    modules = _project_modules()
    wrong = []
    for name, path in modules.items():
        layer = name.split(".")[0]
        for imported, line in _imports(path, modules):
            top = imported.split(".")[0]
            if top == layer or top in sys.stdlib_module_names or top == "__future__":
                continue
            if top not in ALLOWED[layer]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {layer}/ imports {imported}")
    assert not wrong, "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:  # put back after: a raised limit lets later tests parse JSON nested deeper than the readers do
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_cycle_between_modules():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" ↔ ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(("module", "forbidden"), [("tasks.sft_data", "torch"), ("flows.plans", "prefect"),
                                                   ("storage.checkpoints", "torch")])
def test_light_modules_stay_light(module, forbidden):
    import subprocess

    code = f"import sys, {module}; assert {forbidden!r} not in sys.modules, '{module} imported {forbidden}'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
