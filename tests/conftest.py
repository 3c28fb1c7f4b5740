"""Shared test set-up: GPU tests skip themselves where no CUDA GPU is visible."""
from __future__ import annotations

from pathlib import Path

import pytest

from graphlab.env import has_cuda

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
PUBLIC_SAMPLES = FIXTURES / "public"  # third-party dumps, kept in the repository (see its README)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run `pytest -m gpu` on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
