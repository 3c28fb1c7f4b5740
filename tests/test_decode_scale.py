"""The 8B-class decode recording's parts, merged (pure, on synthetic parts that are clearly test data), its tables
and goals, and the recorder run end to end at toy size on the CPU (the eager way: graphs and compile need a GPU;
the GPU's bandwidth and matmul rate stood in for by test numbers). No figure is claimed from any of it."""
from __future__ import annotations

import argparse
import copy

import pytest

from graphlab.decode.roofline import DecoderShape
from graphlab.decode.scale import ScaleReport, merge_parts, merged_provenance, parts_in_order
from graphlab.errors import BadInputError

SHAPE = DecoderShape.llama3_8b().to_dict()
CONDITIONS = {"dtype": "bfloat16", "prompt_len": 128, "max_cache_len": 1024, "new_tokens": 32, "rounds": 3}
# test data, not a measurement: round numbers near an H200's
MACHINE = {"bandwidth": {"read_bytes_per_s": 4.0e12, "copy_bytes_per_s": 3.6e12, "buffer_bytes": 2**32, "trials": 20},
           "mm_flops_per_s": 7.0e14, "mm_n": 8192}


def _prov(command, date, gpu="TEST GPU"):
    return {"gpu": gpu, "driver": "0", "torch": "0", "cuda": "0", "graphlab_version": "0", "git_commit": "0" * 40,
            "command": command, "date": date}


def _part(ways, rows, date, *, memory=None, machine=MACHINE, gpu="TEST GPU"):
    return {"shape": SHAPE, "conditions": CONDITIONS, "machine": machine, "rows": rows, "memory": memory or {},
            "ways": ways, "buckets": sorted({r["batch"] for r in rows}),
            "provenance": _prov(f"graphlab record --models decode_scale --ways {' '.join(ways)}", date, gpu)}


def _row(way, batch, p50_us, **extra):
    return {"way": way, "batch": batch, "p50_us": p50_us, "p90_us": p50_us * 1.1, "calls": 100, **extra}


FIRST = _part(["eager", "graphlab"], [_row("eager", 1, 40_000.0), _row("graphlab", 1, 6_000.0, capture_ms=900.0,
                                                                          instantiate_ms=100.0, pool_bytes=300,
                                                                          tokens_equal=True),
                                      _row("graphlab", 64, 9_000.0, capture_ms=1_500.0, instantiate_ms=100.0,
                                           pool_bytes=1_000, tokens_equal=True)],
              "2027-01-01T00:00:00Z", memory={"graphlab": {"kv_bytes": 64 * 2**27, "largest_kv_bytes": 64 * 2**27,
                                                           "pool_bytes": 1_300, "largest_pool_bytes": 1_000}})
SECOND = _part(["graphlab+compile", "graphlab"],
               [_row("graphlab+compile", 1, 4_500.0, capture_ms=500.0, instantiate_ms=80.0, tokens_equal=False,
                     first_diverging_step=7, max_logit_diff=0.25),
                _row("graphlab", 64, 8_800.0, capture_ms=1_400.0, instantiate_ms=100.0, pool_bytes=1_000)],
               "2027-01-01T00:09:00Z",
               machine={**MACHINE, "bandwidth": {**MACHINE["bandwidth"], "read_bytes_per_s": 4.2e12}})


def test_parts_merge_row_by_row_the_later_replacing_and_saying_so():
    merged = merge_parts([FIRST, SECOND])
    keys = [(r["way"], r["batch"]) for r in merged["rows"]]
    assert keys == [("eager", 1), ("graphlab", 1), ("graphlab+compile", 1), ("graphlab", 64)]
    assert next(r for r in merged["rows"] if r["batch"] == 64)["p50_us"] == 8_800.0
    assert merged["notes"] == ["graphlab at batch 64: part 1 replaced an earlier part's row."]
    assert merged["machine"]["bandwidth"]["read_bytes_per_s"] == pytest.approx(4.1e12)  # the median of 4.0 and 4.2
    assert len(merged["machine"]["per_part"]) == 2 and len(merged["parts"]) == 2
    prov = merged_provenance([FIRST, SECOND])
    assert prov["command"].count("graphlab record --models decode_scale") == 2 and prov["date"].endswith("09:00Z")
    assert parts_in_order([("b", SECOND), ("a", FIRST)]) == [FIRST, SECOND]


def test_parts_of_another_step_or_gpu_do_not_merge():
    other = copy.deepcopy(SECOND)
    other["conditions"]["max_cache_len"] = 2048
    with pytest.raises(BadInputError, match=r"part 1 has other conditions than part 0 \(max_cache_len\)"):
        merge_parts([FIRST, other])
    with pytest.raises(BadInputError, match="part 1 ran on OTHER GPU"):
        merge_parts([FIRST, _part(["eager"], [_row("eager", 8, 1.0)], "2027", gpu="OTHER GPU")])
    with pytest.raises(BadInputError, match="no decode_scale parts"):
        merge_parts([])
    with pytest.raises(BadInputError, match="lacks machine"):
        merge_parts([{k: v for k, v in FIRST.items() if k != "machine"}])
    with pytest.raises(BadInputError, match=r"unknown way\(s\) \['vllm'\]"):
        merge_parts([_part(["vllm"], [_row("vllm", 1, 1.0)], "2027")])


def test_the_report_against_its_floor_and_its_goals():
    report = ScaleReport.from_dict(merge_parts([FIRST, SECOND]), source="test data")
    floor = report.floor(1)
    assert report.bandwidth == (4.1e12, "read-only reduction")
    assert floor.memory_us == pytest.approx(15_026_765_824 / 4.1e12 * 1e6)
    assert report.ratio("graphlab+compile", 1) == pytest.approx(4_500.0 / floor.floor_us)
    assert report.bound(report.row("eager", 1)) == "launch-bound"  # 40 ms against the graph's 6 ms
    assert report.bound(report.row("graphlab", 1)) == "memory-bound"
    goals = {g["goal"]: g for g in report.goals()}
    compiled = goals["graphlab+compile at batch 1 within 1.25x the memory floor"]
    assert compiled["met"] is (4_500.0 / floor.floor_us <= 1.25)
    capture = goals["graphlab: capture + instantiate of every bucket within 10 s"]
    assert capture["met"] and capture["measured"] == "2.5 s over 2 buckets"  # 1.0 s at b1 + 1.5 s at b64 (the later part)
    assert goals["graphlab: KV memory within 1.1x the largest bucket's"]["met"] is True
    assert goals["graphlab: graph pools within 1.1x the largest bucket's"]["met"] is False  # 1,300 over 1,000
    for view in ("steps", "roofline", "start-up", "memory", "tokens"):
        text = str(report.table(view))
        assert "nan" not in text.lower() and "None" not in text
    assert "first step that differs" in str(report.table("tokens"))
    with pytest.raises(BadInputError, match="views"):
        report.table("latency")


def test_the_recorder_runs_end_to_end_at_toy_size_on_the_cpu(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from graphlab.decode.scale_run import build_on_device
    from graphlab.loader import load
    from graphlab.studies import decode_scale
    from graphlab.studies.record import study_flags

    monkeypatch.setenv("GRAPHLAB_DECODE_SCALE_SIZE", "toy")
    monkeypatch.setenv("GRAPHLAB_DECODE_SCALE_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setattr(decode_scale, "measure_machine", lambda: copy.deepcopy(MACHINE))  # test data
    if not torch.cuda.is_available():
        monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    out = tmp_path / "recordings"
    for variable, value in study_flags(argparse.Namespace(ways=["eager"], batch_sizes=[1, 2])).items():
        monkeypatch.setenv(variable, value)
    decode_scale.record(out, _prov("graphlab record --models decode_scale --ways eager", "2027-01-01T00:00:00Z"))
    monkeypatch.setenv("GRAPHLAB_RECORD_BUCKETS", "2 4")
    folder = decode_scale.record(out, _prov("graphlab record --models decode_scale --buckets 2 4",
                                            "2027-01-01T00:05:00Z"))
    report = load(ScaleReport, "decode_scale", gpu=folder.parent.name, root=out)
    assert [(r.way, r.batch) for r in report.rows] == [("eager", 1), ("eager", 2), ("eager", 4)]
    assert all(r.p50_us and r.p50_us > 0 and r.kv_cache_bytes for r in report.rows)
    assert report.notes == ["eager at batch 2: part 1 replaced an earlier part's row."]
    assert report.shape["layers"] == 2 and report.shape["param_bytes"] == 4
    assert report.memory["eager"]["kv_bytes"] == report.memory["eager"]["largest_kv_bytes"]  # one cache, shared
    assert (tmp_path / "work" / decode_scale.ARCHIVE).stat().st_size > 0
    monkeypatch.setenv("GRAPHLAB_RECORD_WAYS", "eager fast")
    with pytest.raises(BadInputError, match=r"unknown way\(s\) \['fast'\]"):
        decode_scale.record(out, _prov("x", "2027"))
    monkeypatch.setenv("GRAPHLAB_RECORD_WAYS", "eager")
    monkeypatch.setenv("GRAPHLAB_RECORD_BUCKETS", "2 x")
    with pytest.raises(BadInputError, match="--buckets must be positive batch sizes, got 2 x"):
        decode_scale.record(out, _prov("x", "2027"))
    model = build_on_device(decode_scale.options_for("toy", None).config, "cpu", torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16} and model.device.type == "cpu"


def test_the_roofline_figure_shows_floors_regions_ways_and_launch_bound_points():
    pytest.importorskip("plotly")
    from graphlab.viz.roofline_plot import plot_roofline

    rows = [_row(way, b, us) for way, scale in (("eager", 40_000.0), ("graphlab", 5_000.0))
            for b, us in ((1, scale), (64, scale * 1.1), (256, scale * 2.5))]  # test data
    report = ScaleReport.from_dict(merge_parts([_part(["eager", "graphlab"], rows, "2027")]), source="test data")
    assert [report.floor(b).bound for b in (1, 64, 256)] == ["memory", "memory", "compute"]
    fig = plot_roofline(report)
    names = [t.name for t in fig.data]
    assert names == ["memory floor", "compute floor", "HF's own reads (every cache position)", "HF eager",
                     "graphlab (eager step)"]
    eager = fig.data[3]
    assert list(eager.marker.symbol) == ["circle-open", "circle-open", "circle-open"]  # 8x the graph's time
    assert set(fig.data[4].marker.symbol) == {"circle"}
    regions = [a.text for a in fig.layout.annotations]
    assert "memory-bound" in regions and "compute-bound" in regions
    assert any("launch-bound (HF eager at 1" in str(t) for t in regions)
    assert fig.layout.yaxis.type == "log" and all(t.endswith((" µs", " ms")) for t in fig.layout.yaxis.ticktext)
    assert "nan" not in fig.to_json().lower()
