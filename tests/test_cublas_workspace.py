"""graphlab finds torch's cuBLAS-workspace clearer by feature, not by version (the GPU side is
tests/gpu/test_gpu_cublas_workspace.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from graphlab.capture import cublas_workspace
from graphlab.capture.cublas_workspace import clear_cublas_workspaces, workspace_clearer


def _torch(monkeypatch: pytest.MonkeyPatch, public: bool, private: bool, calls: list[str]) -> None:
    """Make the module see a torch that has the public clearer, the private one, both or neither."""
    cuda = SimpleNamespace(**({"clear_cublas_workspaces": lambda: calls.append("public")} if public else {}))
    c = SimpleNamespace(**({"_cuda_clearCublasWorkspaces": lambda: calls.append("private")} if private else {}))
    monkeypatch.setattr(cublas_workspace, "torch", SimpleNamespace(cuda=cuda, _C=c))


def test_the_public_function_wins_over_the_private_one(monkeypatch):
    calls: list[str] = []
    _torch(monkeypatch, True, True, calls)
    assert clear_cublas_workspaces() is True
    assert calls == ["public"]


def test_older_torch_uses_the_private_function(monkeypatch):
    calls: list[str] = []
    _torch(monkeypatch, False, True, calls)
    assert clear_cublas_workspaces() is True
    assert calls == ["private"]


def test_a_torch_without_either_is_told_apart_and_nothing_is_called(monkeypatch):
    calls: list[str] = []
    _torch(monkeypatch, False, False, calls)
    assert workspace_clearer() is None
    assert clear_cublas_workspaces() is False
    assert calls == []
