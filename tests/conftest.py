"""Shared fixtures: the real-data folder beside the project, a session-wide Prefect test harness."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared_file(*parts: str) -> Path:
    """A file of ../shared/data, or skip the test with the reason when it is not there."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real test data not available: {path} (expected ../shared/data beside the project)")
    return path


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect server (SQLite) for every flow test of the session."""
    from prefect.testing.utilities import prefect_test_harness

    from flows.pipeline import foreground_run_settings
    from flows.temporary_server import SERVER_SETTINGS

    for name, value in SERVER_SETTINGS.items():  # the server settings of `chatlike run` and `serve`
        os.environ.setdefault(name, value)
    with foreground_run_settings(), prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture()
def in_project_root(monkeypatch):
    """Run with the project root as working directory (configs use paths relative to it)."""
    monkeypatch.chdir(ROOT)
    return ROOT


@pytest.fixture(autouse=True)
def _no_analytics(monkeypatch):
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    monkeypatch.setenv("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


@pytest.fixture()
def one_torch_thread():
    """Tiny tensors: one thread is as fast, and immune to oversubscription on a loaded machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
