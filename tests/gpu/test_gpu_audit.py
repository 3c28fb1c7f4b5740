"""gl.audit on a real GPU: every worked example's planted fault is found and located, every fixed version and every zoo
model audits clean, the driver's getters answer as the audit reads them, and a CUDA error stops an audit (in a process
of its own: the CUDA context is not usable after one).

    .venv/bin/pytest -m gpu tests/gpu/test_gpu_audit.py -v
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from graphlab.studies.audit_examples import EXAMPLES, ZOO_AUDITS, run_example, run_zoo  # noqa: E402

pytestmark = pytest.mark.gpu

PLANTED = [name for name, e in EXAMPLES.items() if e.cause]
FIXED = [name for name, e in EXAMPLES.items() if not e.cause]


@pytest.mark.parametrize("name", PLANTED)
def test_the_planted_fault_is_found_and_located(name):
    report = run_example(name)
    assert EXAMPLES[name].cause in report.causes(), str(report)
    where = next(f.where for f in report.findings if f.cause == EXAMPLES[name].cause)
    assert where.in_words() != "not located", str(report)
    print(report)


def test_a_baked_scalar_is_named_by_its_argument():
    report = run_example("baked_scalar")
    assert report.findings[0].where.argument == "positional argument 1", str(report)


def test_a_baked_address_is_located_to_a_kernel_and_an_argument_word():
    report = run_example("baked_address")
    finding = next(f for f in report.findings if f.cause == "baked_address")
    assert finding.where.kernel and finding.where.argument.startswith("argument word"), str(report)
    assert report.kernels and report.kernels_compared is not None


@pytest.mark.parametrize("name", FIXED)
def test_the_fixed_version_audits_clean(name):
    report = run_example(name)
    assert report.clean, str(report)


@pytest.mark.parametrize("model", ZOO_AUDITS)
def test_zoo_models_audit_clean(model):
    report = run_zoo(model, 1)
    assert report.clean, str(report)
    print(f"zoo {model}: {report.seconds:.2f} s, {report.seconds_per_draw:.3f} s per draw")


def test_the_driver_getters_answer_as_the_audit_reads_them():
    from graphlab.audit.kernel_args import graph_launches
    from graphlab.capture.api import capture

    cg = capture(torch.nn.Linear(64, 64).cuda().eval(), torch.randn(8, 64, device="cuda"))
    launches, probe = graph_launches(cg)
    print(probe.note())
    assert probe.readable, probe.note()
    assert launches and any(k.words for k in launches), probe.note()


def test_a_cuda_error_stops_the_audit_and_is_reported():
    code = textwrap.dedent("""
        import torch, graphlab as gl
        emb = torch.nn.Embedding(10, 4).cuda()
        def step(ids):
            return emb(ids)
        def make(i):
            return ((torch.full((4,), 3 if i == 0 else 99, device="cuda"),), {})   # 99: out of range
        report = gl.audit(step, make, eager=emb)
        print("CAUSES", report.causes(), "STOPPED", bool(report.stopped))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "CAUSES ['cuda_error'] STOPPED True" in out.stdout, out.stdout + out.stderr
