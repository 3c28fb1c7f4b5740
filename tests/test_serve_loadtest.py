"""The load generator, the reports, `gl.run_loadtest` live on the CPU and from a recording, `graphlab loadtest`,
and notebook 09 on a synthetic recording made here (in a temp folder, never committed)."""
from __future__ import annotations

import asyncio
import json
import random
import re
import time

import pytest
from conftest import REPO

import graphlab.mode as mode
from graphlab.cli import main as cli_main
from graphlab.recordings import write_recording
from graphlab.errors import GraphlabError, RecordingError, ResultsError
from graphlab.loadtest.loadgen import (ClientRecord, LoadSpec, make_bodies, poisson_arrivals, run_in_fresh_loop,
                                    run_open_loop)
from graphlab.loader import record_hint
from graphlab.loadtest.api import run_loadtest
from graphlab.loadtest.report import LoadTest, summarize_point
from graphlab.serve.config import ServeConfig

FAST = {"config": ServeConfig(device="cpu", max_batch_size=8, preprocess_threads=2), "progress": False}


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    """Recorded mode over an empty recordings root; the mode is restored afterwards."""
    monkeypatch.setattr(mode, "_current", None)
    monkeypatch.setenv("GRAPHLAB_RECORDINGS", str(tmp_path))
    mode.set_mode("recorded")
    return tmp_path


def test_poisson_arrivals_are_seeded_with_the_right_mean_rate():
    a = poisson_arrivals(2000.0, 2.0, random.Random(7))
    assert a == poisson_arrivals(2000.0, 2.0, random.Random(7))
    assert 3700 < len(a) < 4300 and a == sorted(a) and a[-1] < 2.0
    gaps = [b - x for x, b in zip(a, a[1:])]
    assert abs(sum(gaps) / len(gaps) - 1 / 2000) < 0.05 / 2000


def test_bodies_follow_the_size_distribution_and_the_seed():
    spec = LoadSpec(100.0, rows=((1, 0.5), (4, 0.5)), text_bytes=(5, 9))
    bodies = make_bodies(spec, "text", 400, random.Random(1))
    assert bodies == make_bodies(spec, "text", 400, random.Random(1))
    sizes = [len(b["texts"]) for b in bodies]
    assert set(sizes) == {1, 4} and 150 < sizes.count(4) < 250
    assert all(5 <= len(t) <= 9 for b in bodies for t in b["texts"])
    image = make_bodies(LoadSpec(1.0, rows=((2, 1.0),), image_sides=(8, 8)), "image", 1, random.Random(0))[0]
    assert len(image["images"]) == 2 and image["images"][0]["height"] == 8


@pytest.mark.parametrize("kwargs, message", [
    ({"rate_rps": 0}, "must be positive"),
    ({"rate_rps": 1e6, "duration_s": 10}, "over 200000 requests"),
    ({"rate_rps": 10, "rows": ((0, 1.0),)}, "rows must be"),
])
def test_bad_load_specs(kwargs, message):
    with pytest.raises(GraphlabError, match=message):
        LoadSpec(**kwargs)


def test_the_loop_is_open_sends_never_wait_for_answers():
    async def slow(body):
        await asyncio.sleep(0.2)
        return 200, {"timing_us": {"in_service_us": 200_000.0}, "batch": {"id": 0, "rows": 1, "bucket": 1}}

    offsets = [i / 500 for i in range(100)]  # 100 requests over 0.2 s, each answered after 0.2 s

    async def go():
        return await run_open_loop(slow, [{"texts": ["a"]}] * 100, offsets)

    t0 = time.perf_counter()
    start_ns, records = run_in_fresh_loop(go)
    assert time.perf_counter() - t0 < 1.5  # a closed loop would take 100 x 0.2 s
    assert all(r.status == 200 for r in records)
    lags = sorted((r.sent_ns - r.scheduled_ns) / 1e6 for r in records)
    assert lags[len(lags) // 2] < 5.0  # ms: requests leave on time
    assert records[0].scheduled_ns >= start_ns


def test_unanswered_requests_time_out_as_client_timeouts():
    async def never(body):
        await asyncio.sleep(60)

    async def go():
        return await run_open_loop(never, [{}], [0.0], drain_timeout_s=0.2)

    _, (record,) = run_in_fresh_loop(go)
    assert record.status == 0 and record.reason == "client_timeout"


def _client(i, status, latency_us, start=0, **answer):
    c = ClientRecord(i, 1, scheduled_ns=start + i * 1_000_000, sent_ns=start + i * 1_000_000 + 1000)
    c.status = status
    c.done_ns = c.scheduled_ns + int(latency_us * 1000)
    c.reason = "overloaded" if status == 503 else ""
    c.answer = answer
    return c


def test_summary_of_a_point_and_the_sustained_rule():
    timing = {"pre_us": 10.0, "queue_us": 50.0, "gpu_us": 200.0, "post_us": 20.0, "in_service_us": 280.0}
    clients = [_client(i, 200, 300 + i, timing_us=timing, batch={"id": i // 2, "rows": 2, "bucket": 2})
               for i in range(100)]
    point = summarize_point(setting="graphs", offered_rps=1000, duration_s=0.1, transport="direct", start_ns=0,
                            clients=clients, batches=[])
    assert point.ok == 100 and point.refused == {} and point.sustained
    assert point.latency_us["p50"] == pytest.approx(349.5, abs=1)
    assert point.stages_us["gpu"]["p50"] == 200.0 and point.stages_us["outside"]["p50"] == pytest.approx(69.5, abs=1)
    assert point.batch_rows == {2: 50} and point.mean_batch_rows == 2.0 and point.pad_waste_pct == 0.0
    refused = clients[:90] + [_client(i, 503, 10) for i in range(90, 100)]
    over = summarize_point(setting="graphs", offered_rps=1000, duration_s=0.1, transport="direct", start_ns=0,
                           clients=refused, batches=[])
    assert over.refused == {"overloaded": 10} and not over.sustained
    lt = LoadTest("gpt", points=[point, over])
    assert lt.knees() == {"graphs": 1000.0}
    back = LoadTest.from_dict(json.loads(json.dumps(lt.to_dict())))
    assert back.points[0] == point and back.knees() == lt.knees()
    assert "knee (the highest rate a setting kept up with): graphs 1,000 req/s" in str(lt.table())
    with pytest.raises(ResultsError, match="no points for setting 'eager'"):
        lt.for_setting("eager")
    with pytest.raises(ResultsError, match="no timeline"):
        lt.timeline("graphs")


@pytest.fixture(scope="module")
def cpu_sweep():
    return run_loadtest("mlp", settings=["eager", "graphs+batching"], rates=[60, 240], duration_s=0.5,
                        timeline_rates=[240], progress=False,
                        config=ServeConfig(device="cpu", max_batch_size=8, preprocess_threads=2, max_wait_us=2000))


def test_a_live_sweep_on_the_cpu(cpu_sweep):
    assert cpu_sweep.settings() == ["eager", "graphs+batching"]
    assert [p.offered_rps for p in cpu_sweep.points] == [60, 240, 60, 240]
    low = cpu_sweep.for_setting("graphs+batching")[0]
    assert low.ok == low.sent > 10 and low.batches > 0 and low.transport == "direct"
    assert set(low.stages_us) == {"pre", "queue", "gpu", "post", "outside"}
    assert cpu_sweep.conditions["runners"]["graphs+batching"]["runner"] == "graph_cache"
    window = cpu_sweep.timeline("graphs+batching")
    assert window["rate_rps"] == 240 and window["requests"] and window["batches"]
    assert cpu_sweep.to_pandas().shape[0] == 4
    # the figures draw from it
    from graphlab.loadtest import figures

    assert len(figures.plot_load_curves(cpu_sweep).data) > 4
    assert figures.plot_batch_sizes(cpu_sweep).data
    assert figures.plot_stages(cpu_sweep, 60).data
    assert figures.plot_serving_timeline(cpu_sweep, "graphs+batching").data
    assert "GPU worker" in figures.serving_diagram().source


def test_transport_asgi_measures_the_http_app_too():
    pytest.importorskip("starlette")
    result = run_loadtest("mlp", settings=["eager"], rates=[50], duration_s=0.3, transport="asgi", **FAST)
    (point,) = result.points
    assert point.transport == "asgi" and point.ok == point.sent > 0


def test_bad_arguments_and_no_gpu():
    with pytest.raises(GraphlabError, match="transport must be one of"):
        run_loadtest("mlp", transport="pigeon", **FAST)
    with pytest.raises(GraphlabError, match="needs url="):
        run_loadtest("mlp", transport="http", **FAST)
    import torch

    if not torch.cuda.is_available():
        from graphlab.errors import GPUUnavailableError

        with pytest.raises(GPUUnavailableError, match=r"ServeConfig\(device='cpu'\) for a CPU dry run"):
            run_loadtest("mlp", progress=False)


def test_recorded_mode_refuses_bad_arguments_before_reading_a_recording(recorded):
    with pytest.raises(GraphlabError, match="transport must be one of"):
        run_loadtest("mlp", transport="pigeon")
    with pytest.raises(GraphlabError, match="no served model 'nope'"):
        run_loadtest("nope")


def test_recorded_mode_names_the_missing_recording_and_the_command(recorded):
    with pytest.raises(RecordingError, match=f"no recording 'serving'.*{re.escape(record_hint('serving'))}"):
        run_loadtest("gpt")


def _prov():
    return {"gpu": "synthetic CPU fixture (tests only)", "driver": "-", "torch": "-", "cuda": "-",
            "graphlab_version": "-", "git_commit": "-", "command": "tests", "date": "2026-01-01T00:00:00Z"}


def test_recorded_mode_returns_the_recorded_sweep(recorded, cpu_sweep):
    write_recording(recorded / "h200" / "serving", name="serving", description="test fixture", provenance=_prov(),
                    graphs={}, results={"gpt": cpu_sweep.to_dict()})
    result = run_loadtest("gpt", rates=[1, 2, 3])  # the arguments do not matter: the recording answers
    assert result.points == cpu_sweep.points and "synthetic CPU fixture" in result.source
    assert run_loadtest("gpt", ["eager"], [5], 0.1, seed=3).points == cpu_sweep.points  # positional ones too
    from graphlab.mode import STAND_INS

    assert "graphlab.loadtest.api.run_plan" in STAND_INS  # the one switch decides, not the load test
    with pytest.raises(RecordingError, match="holds no 'resnet18'.*it has gpt"):
        run_loadtest("resnet18")
    with pytest.raises(RecordingError, match="holds no 'gpt_asgi'"):
        run_loadtest("gpt", transport="asgi")


def test_cli_loadtest_writes_its_json(tmp_path, capsys):
    rc = cli_main(["loadtest", "--model", "mlp", "--device", "cpu", "--settings", "eager", "--rates", "40",
                   "--duration", "0.3", "--max-batch-size", "4", "--no-progress", "--out", str(tmp_path)])
    assert rc == 0
    assert "knee (the highest rate a setting kept up with): eager (CPU)" in capsys.readouterr().out
    data = json.loads((tmp_path / "loadtest_mlp.json").read_text())
    assert data["points"][0]["setting"] == "eager" and data["conditions"]["command"].startswith("graphlab loadtest")


def test_cli_loadtest_bad_input_is_one_line_and_exit_2(capsys):
    assert cli_main(["loadtest", "--model", "nope", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("graphlab: error: no served model 'nope'") and err.count("\n") == 1


@pytest.fixture(scope="module")
def four_settings():
    """A CPU sweep of the four settings notebook 09 reads (its exercise divides two of their knees)."""
    return run_loadtest("mlp", settings=["eager", "graphs", "graphs+batching", "eager+batching"], rates=[60],
                        duration_s=0.3, timeline_rates=[60], **FAST)


def test_notebook_09_runs_top_to_bottom_on_a_synthetic_recording(four_settings, recorded, monkeypatch, tmp_path):
    """The notebook's plumbing on a recording made here on the CPU (numbers of no meaning, in a temp folder)."""
    from graphlab.tour import execute_notebook

    import shutil

    four = four_settings
    write_recording(recorded / "h200" / "serving", name="serving", description="test fixture", provenance=_prov(),
                    graphs={}, results={"gpt": four.to_dict()})
    shutil.copytree(REPO / "data" / "recordings" / "h200" / "gpt", recorded / "h200" / "gpt")  # the real GPT sweep
    shutil.copytree(REPO / "data" / "recordings" / "h200" / "serving_http", recorded / "h200" / "serving_http")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    out = tmp_path / "executed"
    out.mkdir()
    execute_notebook(REPO / "notebooks" / "09_serving.ipynb", out, timeout_s=600)
    executed = json.loads((out / "09_serving.ipynb").read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors[0] if errors else None
    text = json.dumps(executed)
    assert "Not answered yet: " in text and "recorded" in text  # the exercise starts unanswered (issue 23)


def test_the_gpu_parts_import_without_the_http_stack_and_the_pure_parts_without_torch():
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        for name in ("starlette", "uvicorn", "httpx", "fastapi", "pydantic"):
            sys.modules[name] = None
        import graphlab.serve.service, graphlab.loadtest.api, graphlab.studies.serving, graphlab.serve.worker
        from graphlab.serve.app import create_app
        from graphlab.serve.config import ServeConfig
        from graphlab.errors import GraphlabError
        try:
            create_app(ServeConfig(device="cpu"))
        except GraphlabError as exc:
            assert "pip install 'graphlab[serve]'" in str(exc), exc
        else:
            raise AssertionError("create_app worked without starlette")
    """)
    # the pure modules (queue, checks, reports, generator) need no torch either
    pure = textwrap.dedent("""
        import sys
        for name in ("torch", "numpy", "plotly", "graphviz", "starlette", "uvicorn", "httpx"):
            sys.modules[name] = None
        import graphlab.serve.batcher, graphlab.serve.payload, graphlab.serve.config, graphlab.loadtest.report
        import graphlab.serve.trace, graphlab.loadtest.loadgen
    """)
    for source in (code, pure):
        result = subprocess.run([sys.executable, "-c", source], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
