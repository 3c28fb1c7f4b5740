"""Ray Serve on the GPU (issue 28's remaining part, issue 43): the deployment with one replica and `num_gpus=1`
beside the plain service, in the same run (`graphlab.studies.serving_ray.measure_ray`, what `graphlab record
--models serving_http` records as its "ray" entry), at a small scale.

For the image model of the serving_http study (torchvision's ResNet-18 at 3x32x32 through `ServedModel`) and the
zoo GPT: the replica runs on the GPU Ray gave it and replays the graphs it captured there; it answers over Ray's HTTP
proxy, `/v1/infer` and the Open Inference Protocol's `/v2` (binary tensors), what the plain service answers; hey
measures both in alternating rounds (the figures are printed and written to $GRAPHLAB_RAY_OUT, never asserted);
the GPT's replica is killed under load and every request gets an answer, and Ray starts another.

Needs a GPU, Ray Serve, torchvision and hey. On the lent H200 (no Ray there, no package index): the wheel travels in
parts, `scripts/ray_wheel_parts.sh` says how, and `docs/gpu-validation.md` has the calls.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ray.serve")
pytest.importorskip("torchvision")
pytest.importorskip("uvicorn")

from graphlab.loadtest.external import find_hey  # noqa: E402
from graphlab.loadtest.over_http import ray_goals_rows  # noqa: E402
from graphlab.studies.serving_http import BODIES  # noqa: E402
from graphlab.studies.serving_ray import RayPlan, measure_ray  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.ray, pytest.mark.timeout(900)]


def test_ray_serve_on_the_gpu_beside_the_plain_service(tmp_path):
    hey = find_hey()
    if hey is None:
        pytest.skip("needs hey (GRAPHLAB_HEY=path to its binary)")
    plan = RayPlan(device="cuda", rounds=2, duration_s=2.0, open_loop_rates=(50.0,), kill_rate=100.0,
                   kill_after_s=3.0, kill_seconds=30.0)
    results = measure_ray(tmp_path, hey=hey, plan=plan, bodies=BODIES)
    out = Path(os.environ.get("GRAPHLAB_RAY_OUT", tmp_path / "out"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "ray_gpu.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    for row in ray_goals_rows(results):
        print(f"\n{row['goal']}: {row['verdict']} ({row['note']})")

    assert results["cluster"].get("GPU", 0) >= 1
    for name in ("image", "gpt"):
        model = results["models"][name]
        replica = model["replica"]
        # on the GPU Ray gave it (Ray sets CUDA_VISIBLE_DEVICES), replaying the graphs it captured there
        assert replica["device"] == "cuda" and replica["cuda_visible_devices"] not in (None, ""), replica
        assert replica["runner"]["runner"] == "graph_cache" and replica["runner"]["graphs"] >= 1, replica
        assert replica["runner"]["captures"] == replica["runner"]["graphs"], replica  # none while serving
        plain, ray = model["answers"]["plain"], model["answers"]["ray"]
        assert plain["v1_status"] == ray["v1_status"] == 200 and ray["replica"]  # through Ray's proxy
        assert [row[0] for row in plain["v1_ids"]] == [row[0] for row in ray["v1_ids"]], model["answers"]
        if name == "image":  # the protocol's binary tensors through Ray's proxy
            assert plain["v2_status"] == ray["v2_status"] == 200
            assert plain["v2_first_output"]["shape"] == ray["v2_first_output"]["shape"]
        for run, rounds in model["runs"].items():  # every request of every hey run answered 200, on both
            assert all(r["ok_fraction"] == 1.0 and r["errors"] == 0 for r in rounds), (name, run, rounds)
        assert model["plain_exit_code"] == 0
    kill = results["models"]["gpt"]["kill"]
    assert kill["lost"] == 0, kill                                   # every request got an answer
    assert set(kill["by_status"]) <= {"200", "408", "500", "503"}, kill
    assert kill["first_ok_after_kill_s"] is not None, kill          # served again after the kill
    replaced = kill["replaced_by"]
    assert "error" not in replaced and replaced["pid"] != results["models"]["gpt"]["replica"]["pid"], replaced
    assert replaced["runner"]["graphs"] >= 1                          # the new replica captured its own graphs
