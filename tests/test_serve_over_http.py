"""What an HTTP client sees: servers in their own processes, `hey` against them, and the recording read back.

The study runs for real here on the CPU (a bare app, the eager service, your own model, a flood; about 20 s on
2 cores) with Debian's `hey` (`scripts/setup.sh` installs it); the shipped H200 recording is read back too."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

import graphlab as gl
from graphlab.recordings import load_recording, write_recording
from graphlab.loadtest.external import (TCP_COUNTERS, ServerProcess, capacity_rps, find_hey, parse_hey, parse_hey_csv,
                                     run_hey, tcp_counters)
from graphlab.loader import record_hint
from graphlab.loadtest.over_http import HttpServing, load_http_serving

HEY = find_hey()
needs_hey = pytest.mark.skipif(HEY is None, reason="needs hey (apt-get install hey; scripts/setup.sh does it)")
PROVENANCE = {"gpu": "CPU test", "driver": "none", "torch": "cpu", "cuda": "none", "graphlab_version": "0",
              "git_commit": "0" * 40, "command": "pytest tests/test_serve_over_http.py", "date": "2026-12-02T00:00:00Z"}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    pytest.importorskip("uvicorn")
    if HEY is None:
        pytest.skip("needs hey (apt-get install hey)")
    from graphlab.studies.serving_http import HttpServingPlan, measure

    folder = tmp_path_factory.mktemp("serving_http")
    # the protocols' comparison at a tiny scale: the mlp's eager server at 50 req/s, a small image model of the
    # tests' own (torchvision's ResNet-18 on the GPU) at 4 clients, one round each
    plan = HttpServingPlan(model="mlp", device="cpu", settings=("eager",), duration_s=0.5, concurrency=(4, 16),
                           capacity_for=("bare",), open_loop_rates=(20, 40), in_process_rates=(40,), flood_clients=64,
                           batched_setting="eager+batching", protocol_setting="eager",
                           image_model="serve_test_models:tiny_image", image_clients=4, protocol_rounds=1)
    tests = str(Path(__file__).resolve().parent)
    with pytest.MonkeyPatch.context() as patch:  # the servers import the tests' image model
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")])))
        return measure(folder, hey=HEY, plan=plan), folder


@needs_hey
def test_every_server_answers_every_hey_request_and_the_flood_loses_none(measured):
    results, _ = measured
    servers = results["hey"]["servers"]
    assert set(servers) == {"bare", "eager", "own", "flood"}
    for name in ("bare", "eager", "own"):
        for run in ("single", "rate50", "rate200"):
            r = servers[name][run]
            assert r["requests"] > 0 and r["ok_fraction"] == 1.0 and r["errors"] == 0, (name, run, r)
            assert 0 < r["latency_ms"]["p50"] <= r["latency_ms"]["max"]  # hey leaves out p99 under 100 answers
        # SIGTERM: graphlab's service exits 0 after its bounded drain; plain uvicorn re-raises the signal when done
        assert servers[name]["exit_code"] == (-15 if name == "bare" else 0), name
    assert servers["bare"]["capacity_rps"] == capacity_rps(servers["bare"]["capacity_curve"]) > 0
    flood = servers["flood"]["flood"]
    assert flood["lost"] == 0 and set(flood["by_status"]) <= {"200", "503"}
    for status in flood["by_status"].values():  # where the slowest spent their time: connecting, or waiting
        assert 0 <= status["connect_p99_ms"] <= status["connect_max_ms"] <= status["max_ms"] + 1
        assert 0 <= status["wait_p99_ms"] <= status["wait_max_ms"] <= status["max_ms"] + 1
    assert set(flood["kernel"]) == {"somaxconn", *TCP_COUNTERS}
    counters = servers["flood"]["service"]["counters"]
    assert counters["accepted"] == counters["answered_ok"] == flood["by_status"]["200"]["count"]


@needs_hey
def test_the_protocols_side_by_side_every_request_answered_200_in_each(measured):
    results, _ = measured
    protocols = results["protocols"]
    assert protocols["rounds"] == 1 and protocols["protocols"] == ["graphlab", "oip_json", "oip_binary"]
    latency, capacity = protocols["latency"], protocols["capacity"]
    assert (latency["model"], latency["clients"], latency["qps"]) == ("mlp", 1, 50.0)
    assert (capacity["model"], capacity["clients"], capacity["qps"]) == ("tiny_image", 4, None)
    for part in (latency, capacity):
        assert set(part["runs"]) == {"graphlab", "oip_json", "oip_binary"}
        for protocol, runs in part["runs"].items():
            (run,) = runs
            assert run["requests"] > 0 and run["ok_fraction"] == 1.0 and run["errors"] == 0, (protocol, run)
        bodies = part["bodies"]
        assert bodies["graphlab"]["path"] == "/v1/infer"
        assert bodies["oip_binary"]["path"] == f"/v2/models/{part['model']}/infer"
        assert bodies["oip_binary"]["content_type"] == "application/octet-stream"
        assert bodies["oip_binary"]["bytes"] < bodies["graphlab"]["bytes"]  # 4 bytes a number, not ~8 characters
    assert capacity["bodies"]["graphlab"]["bytes"] > 3 * 32 * 32 * 6       # the nested JSON image: over 18 KB
    assert capacity["service"]["counters"]["answered_ok"] == sum(
        r["status"]["200"] for runs in capacity["runs"].values() for r in runs)
    assert set(results["raw"]) >= {f"protocols_{part}_{p}_r1" for part in ("latency", "capacity")
                                   for p in ("graphlab", "oip_json", "oip_binary")}


@needs_hey
def test_the_results_name_no_path_of_the_machine(measured):
    results, folder = measured
    text = json.dumps(results)
    assert str(folder) not in text and str(HEY) not in text and sys.executable not in text


@needs_hey
def test_the_recording_reads_back_as_tables_figures_and_load_curves(measured, tmp_path):
    results, _ = measured
    write_recording(tmp_path / "cpu" / "serving_http", name="serving_http", description="CPU test",
                    provenance=PROVENANCE, graphs={}, results=results)
    http = gl.load(gl.HttpServing, gpu="cpu", root=tmp_path)
    assert http.raw == results["raw"] and set(http.raw) >= {"bare_single", "eager_rate50"}  # hey's own output
    table = http.to_pandas()
    assert list(table.index) == ["bare Starlette app (the floor)", "eager", "your own model (graphs+batching)"]
    assert table.loc["eager", "50 req/s p50 ms"] == results["hey"]["servers"]["eager"]["rate50"]["latency_ms"]["p50"]
    assert [row["server"] for row in http.table().rows] == list(table.index)  # the view shows the same rows
    assert [r["clients"] for r in http.capacity_rows()] == [4, 16]
    assert {r["status"] for r in http.flood_rows()} >= {"200", "none (lost)"}
    both = http.beside_in_process()
    assert set(both.settings()) == {"eager over HTTP", "eager+batching in process"}
    assert http.open_loop.conditions["transport"] == "http"
    fig = gl.plot_http_capacity(http)
    assert "recorded" in fig.layout.title.text.lower()
    assert "recorded" in gl.plot_load_curves(both).layout.title.text.lower()
    # the protocols side by side, and the goals judged
    rows = http.protocol_rows()
    assert [(r["part"], r["protocol"]) for r in rows] == [
        (part, label) for part in ("latency", "capacity") for label in (
            "graphlab's JSON (/v1/infer)", "Open Inference Protocol, JSON tensors", "Open Inference Protocol, binary tensors")]
    capacity = results["protocols"]["capacity"]["runs"]
    assert rows[5]["req/s"] == capacity["oip_binary"][0]["rps"] and rows[5]["not answered 200"] == 0
    assert "Open Inference Protocol, binary tensors" in str(http.protocol_table())
    goals = http.protocol_goals().rows
    assert len(goals) == 3 and {g["verdict"] for g in goals} <= {"goal met", "goal missed"}
    ratio = capacity["oip_binary"][0]["rps"] / capacity["graphlab"][0]["rps"]
    assert goals[0]["measured"] == gl.present.ratio(ratio)
    assert goals[0]["verdict"] == ("goal met" if ratio >= 5 else "goal missed")


def test_the_shipped_h200_recording_holds_the_floor_the_settings_and_the_flood():
    try:
        load_recording("serving_http", gpu="h200")
    except gl.RecordingError:
        pytest.skip("the serving_http recording is not shipped yet")
    http = gl.load(HttpServing, gpu="h200")
    names = set(http.servers)
    assert {"bare", "graphs", "graphs+batching", "eager", "own", "flood"} <= names
    assert http.servers["graphs+batching"]["capacity_rps"] > 0 and http.in_process_capacity_rps()
    assert len(http.goals()) == 3 and "Recorded on NVIDIA H200" in http.source
    flood = http.servers["flood"]["flood"]
    assert flood["lost"] == 0 and set(flood["by_status"]) <= {"200", "503"}


def test_parse_hey_reads_a_summary_and_its_errors():
    text = ("Summary:\n  Total:\t2.0 secs\n  Slowest:\t0.0100 secs\n  Fastest:\t0.0001 secs\n  Average:\t0.0010 secs\n"
            "  Requests/sec:\t1000.5\n\nLatency distribution:\n  50%% in 0.0009 secs\n  99%% in 0.0050 secs\n\n"
            "Status code distribution:\n  [200]\t1990 responses\n  [503]\t5 responses\n\n"
            "Error distribution:\n  [5]\tPost \"http://127.0.0.1:1/v1/infer\": EOF\n")
    out = parse_hey(text)
    assert out["rps"] == 1000.5 and out["latency_ms"]["p50"] == 0.9 and out["latency_ms"]["max"] == 10.0
    assert out["status"] == {"200": 1990, "503": 5} and out["errors"] == 5 and out["requests"] == 2000
    assert out["ok_fraction"] == pytest.approx(0.995)


def test_hey_csv_gives_each_status_its_connect_and_wait_times_and_counts_the_rest_as_lost():
    head = "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n"
    rows = ["0.0300,0.0000,0,0.0001,0.0290,0.0001,200,0.01", "1.0450,1.0200,0,0.0001,0.0240,0.0001,200,0.02",
            "2.0100,0.0010,0,0.0001,2.0050,0.0001,503,0.03", "Post http://x: EOF", "0.5,x,0,0,0.5,0,200,0.1"]
    out = parse_hey_csv(head + "\n".join(rows) + "\n", {"concurrency": 2})
    ok, refused = out["by_status"]["200"], out["by_status"]["503"]
    assert out["concurrency"] == 2 and out["lost"] == 2  # a line without a status, a line with a bad number
    assert ok["count"] == 2 and ok["max_ms"] == 1045.0 and ok["connect_max_ms"] == 1020.0 and ok["slow_connects"] == 1
    assert refused["wait_max_ms"] == 2005.0 and refused["slow_connects"] == 0  # the server kept it, not the kernel


def test_tcp_counters_read_the_kernels_netstat_and_nothing_where_there_is_none():
    text = ("TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPSynRetrans TCPTimeouts\n"
            "TcpExt: 0 12 14 3 5\nIpExt: InNoRoutes\nIpExt: 0\n")
    assert tcp_counters(text) == {"ListenOverflows": 12, "ListenDrops": 14, "TCPSynRetrans": 3, "TCPTimeouts": 5}
    assert tcp_counters("IpExt: InNoRoutes\nIpExt: 0\n") == {}


def test_a_server_that_exits_before_it_is_ready_is_a_clear_error(tmp_path):
    with pytest.raises(gl.ConfigurationError, match="exited 3 before it was ready"):
        with ServerProcess([sys.executable, "-c", "import sys; print('no such model'); sys.exit(3)"],
                           tmp_path / "log.txt"):
            pass


def test_hey_refuses_a_run_without_clients(tmp_path):
    with pytest.raises(gl.BadInputError, match="at least 1 client"):
        run_hey("hey", "http://127.0.0.1:1/v1/infer", tmp_path / "b.json", concurrency=0, duration_s=1.0)


def test_no_recording_is_an_error_that_says_how_to_record_it(tmp_path):
    with pytest.raises(gl.RecordingError, match=re.escape(record_hint("serving_http"))):
        gl.load(gl.HttpServing, gpu="h200", root=tmp_path)


def test_load_http_serving_is_a_deprecated_alias_of_gl_load():
    with pytest.warns(DeprecationWarning, match=re.escape("gl.load(gl.HttpServing)")):
        http = load_http_serving(gpu="h200")
    assert http == gl.load(gl.HttpServing, gpu="h200")


def test_a_recording_without_the_load_tests_reads_the_hey_runs_alone(tmp_path):
    """The open-loop sweeps are the recording's "<model>_http" and "<model>_direct" when it holds them."""
    results = {"hey": {"model": "mlp", "device": "cpu", "servers": {"bare": {"single": {"rps": 10.0}}}}, "raw": {}}
    write_recording(tmp_path / "cpu" / "serving_http", name="serving_http", description="CPU test",
                    provenance=PROVENANCE, graphs={}, results=results)
    http = gl.load(gl.HttpServing, gpu="cpu", root=tmp_path)
    assert http.open_loop is None and http.in_process is None and http.conditions == {"model": "mlp", "device": "cpu"}
    with pytest.raises(gl.RecordingError, match=re.escape(record_hint("serving_http"))):
        http.beside_in_process()


# -- the open-loop generator's own HTTP client ---------------------------------------------------------------
def _send(url, client, bodies):
    from graphlab.loadtest.loadgen import HTTPTransport, run_in_fresh_loop

    async def go():
        send = HTTPTransport(url, client=client)
        try:
            return [await send(body) for body in bodies]
        finally:
            await send.aclose()

    return run_in_fresh_loop(go)


def test_the_raw_client_and_httpx_get_the_same_answers(eager_mlp_server):
    pytest.importorskip("httptools")
    bodies = [{"vectors": [[0.5] * 256], "top_k": 2}, {"vectors": "not a list"}, {"vectors": [[0.5] * 256]}]
    url = eager_mlp_server.base_url
    raw, httpx_ = _send(url, "raw", bodies), _send(url, "httpx", bodies)
    assert [s for s, _ in raw] == [s for s, _ in httpx_] == [200, 422, 200]
    assert raw[0][1]["results"] == httpx_[0][1]["results"] and raw[1][1]["error"] == httpx_[1][1]["error"]


def test_the_raw_client_keeps_its_schedule_in_an_open_loop(eager_mlp_server):
    pytest.importorskip("httptools")
    import random

    from graphlab.loadtest.loadgen import HTTPTransport, poisson_arrivals, run_in_fresh_loop, run_open_loop

    offsets = poisson_arrivals(100.0, 1.0, random.Random(1))

    async def go():
        send = HTTPTransport(eager_mlp_server.base_url, client="raw")
        try:
            return await run_open_loop(send, [{"vectors": [[0.1] * 256]}] * len(offsets), offsets, 30.0)
        finally:
            await send.aclose()

    _, records = run_in_fresh_loop(go)
    assert len(records) == len(offsets) and all(r.status == 200 for r in records)
    assert all(r.scheduled_ns <= r.sent_ns <= r.done_ns for r in records)


def test_the_raw_client_answers_status_0_when_no_server_listens():
    pytest.importorskip("httptools")
    from graphlab.loadtest.external import free_port

    ((status, data),) = _send(f"http://127.0.0.1:{free_port()}", "raw", [{"vectors": [[0.0] * 256]}])
    assert status == 0 and data["error"] == "connect_failed"


def test_the_http_transport_refuses_a_bad_url_or_client():
    from graphlab.loadtest.loadgen import HTTPTransport

    pytest.importorskip("httptools")
    with pytest.raises(gl.BadInputError, match="http://HOST:PORT"):
        HTTPTransport("http://localhost", client="raw")
    with pytest.raises(gl.BadInputError, match="'auto', 'raw' or 'httpx'"):
        HTTPTransport("http://127.0.0.1:1", client="curl")


def test_ray_serve_that_could_not_run_is_shown_blocked_and_one_that_did_is_judged():
    from graphlab.loadtest.over_http import ray_goals_rows

    (row,) = ray_goals_rows({"error": "RuntimeError: raylet did not start"})
    assert row["verdict"] == "blocked" and "raylet did not start" in row["note"]
    run = lambda rps: {"rps": rps, "latency_ms": {"p50": 1.0}, "requests": 100, "status": {"200": 100},  # noqa: E731
                       "ok_fraction": 1.0}
    ray = {"models": {
        "image": {"model": "resnet18_32", "clients": 32, "runs": {
            "plain_graphlab": [run(1000.0), run(1100.0), run(900.0)], "ray_graphlab": [run(850.0)] * 3,
            "plain_oip_binary": [run(4000.0)], "ray_oip_binary": [run(2000.0)]}},
        "gpt": {"model": "gpt", "clients": 32, "runs": {"plain_graphlab": [run(3000.0)], "ray_graphlab": [run(900.0)]},
                "kill": {"rate_rps": 100.0, "by_status": {"200": 290, "503": 10}, "lost": 0,
                         "first_ok_after_kill_s": 12.5}}}}
    rows = ray_goals_rows(ray)
    assert [(r["measured"], r["verdict"]) for r in rows[:3]] == [(0.85, "goal met"), (0.5, "goal missed"),
                                                                 (0.3, "no goal")]
    assert rows[3]["verdict"] == "goal met" and "290 answered 200, 10 answered 503" in rows[3]["note"]
    http = HttpServing(model="gpt", servers={}, open_loop=None, in_process=None, source="test", ray=ray)
    table = http.ray_table()
    assert [r["verdict"] for r in table.rows] == [r["verdict"] for r in rows]
    assert table.rows[0]["measured"] == gl.present.ratio(0.85) and table.rows[3]["measured"] is None
