"""graphlab finds torch's cuBLAS-workspace clearer by feature, not by version (the GPU side is
tests/gpu/test_gpu_cublas_workspace.py)."""
from __future__ import annotations

from types import SimpleNamespace

from graphlab.capture.cublas_workspace import clear_cublas_workspaces, workspace_clearer


def _torch(public: bool, private: bool, calls: list[str]) -> SimpleNamespace:
    cuda = SimpleNamespace(**({"clear_cublas_workspaces": lambda: calls.append("public")} if public else {}))
    c = SimpleNamespace(**({"_cuda_clearCublasWorkspaces": lambda: calls.append("private")} if private else {}))
    return SimpleNamespace(cuda=cuda, _C=c)


def test_the_public_function_wins_over_the_private_one():
    calls: list[str] = []
    assert clear_cublas_workspaces(_torch(True, True, calls)) is True
    assert calls == ["public"]


def test_older_torch_uses_the_private_function():
    calls: list[str] = []
    assert clear_cublas_workspaces(_torch(False, True, calls)) is True
    assert calls == ["private"]


def test_a_torch_without_either_is_told_apart_and_nothing_is_called():
    calls: list[str] = []
    torch = _torch(False, False, calls)
    assert workspace_clearer(torch) is None
    assert clear_cublas_workspaces(torch) is False
    assert calls == []

