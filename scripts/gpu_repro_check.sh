#!/usr/bin/env bash
# Does a speedup come back? GPU check of the paired timing method (issue 8), from the repository root:
#   1. record the zoo with the paired method: python3 -m graphlab record --models mlp cnn gpt resnet18
#      (one fresh process per model; DOT dumps, census, paired sweep at batch 1..64, timeline), into
#      $OUT/rec; packed as $OUT/recordings.tar.gz (unpack under data/recordings/ to ship it)
#   2. optionally wait $GAP_S seconds (default 0: the repros of the first models already run a minute or
#      two after their recordings), then `graphlab repro MODEL` for each model, each in a fresh process,
#      against the recordings of step 1 (GRAPHLAB_RECORDINGS=$OUT/rec): $OUT/repro/MODEL.json
#   3. $OUT/repro_summary.json and $OUT/repro_summary.md: per model and batch size, graph p50, eager p50,
#      paired speedup and fastest-mode speedup now vs recorded, the modes each run saw, the goals
#      (graph p50 within 3%, paired speedup within 10%), and how long each part took
# Time on the H200 (estimated from the parts: record ~20-30 s per model, repro ~12-15 s per model,
# process starts included): about 3 minutes. Each step has its own time limit.
#   OUT=/tmp/repro-check bash scripts/gpu_repro_check.sh
#   MODELS="mlp gpt" SKIP_RECORD=1 bash scripts/gpu_repro_check.sh     # repro against the shipped recordings
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpu-repro-check}"
MODELS="${MODELS:-mlp cnn gpt resnet18}"
mkdir -p "$OUT/repro"
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TQDM_DISABLE=1
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
elapsed() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; nproc; date -u; } > "$OUT/env.log" 2>&1
: > "$OUT/parts.tsv"

record_rc=0
if [ -z "${SKIP_RECORD:-}" ]; then
  for model in $MODELS; do
    t0=$(now_ms)
    timeout "${RECORD_S:-90}" python3 -m graphlab record --out "$OUT/rec" --models "$model" >> "$OUT/record.log" 2>&1 \
      || { record_rc=$?; echo "[check] record $model failed: rc=$record_rc" >> "$OUT/record.log"; }
    printf "record\t%s\t%s\n" "$model" "$(elapsed "$t0")" >> "$OUT/parts.tsv"
  done
  export GRAPHLAB_RECORDINGS="$OUT/rec"
fi
sleep "${GAP_S:-0}"

repro_rc=0
for model in $MODELS; do
  t0=$(now_ms)
  timeout "${REPRO_S:-90}" python3 -m graphlab repro "$model" --quiet --max-extra-s "${EXTRA_S:-40}" --json "$OUT/repro/$model.json" >> "$OUT/repro.log" 2>&1 \
    || { repro_rc=$?; echo "[check] repro $model failed: rc=$repro_rc" >> "$OUT/repro.log"; }
  printf "repro\t%s\t%s\n" "$model" "$(elapsed "$t0")" >> "$OUT/parts.tsv"
done
if [ -d "$OUT/rec" ]; then tar -C "$OUT/rec" -czf "$OUT/recordings.tar.gz" . && rm -rf "$OUT/rec"; fi

python3 - "$OUT" <<'EOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
parts = [line.split("\t") for line in (out / "parts.tsv").read_text().splitlines() if line.strip()]
summary = {"parts_s": [{"step": s, "model": m, "seconds": float(t)} for s, m, t in parts], "models": {}}
lines = ["# Paired timing: two fresh processes, now vs recorded", "",
         "| model | batch | graph p50 now / rec (ratio) | graph p50, fastest mode | eager p50 now / rec (ratio) | "
         "paired speedup now / rec (ratio) | fastest-mode speedup now / rec (ratio) | modes now / rec |",
         "|---|---|---|---|---|---|---|---|"]
runs = [json.loads(path.read_text()) for path in sorted((out / "repro").glob("*.json"))]


def pair(x, y, spec=".1f"):
    return "-" if x is None or y is None else f"{x:{spec}} / {y:{spec}} ({x / y:.3f})"


for data in runs:
    summary["models"][data["model"]] = {"goals": data["goals"], "host_now": data["host_now"],
                                        "host_recorded": data["host_recorded"], "rows": data["rows"]}
    for r in data["rows"]:
        def trio(now, rec, ratio, spec=".1f"):
            return "-" if now is None or rec is None else f"{now:{spec}} / {rec:{spec}} ({ratio:.3f})"
        lines.append(f"| {data['model']} | {r['batch_size']} | {trio(r['graph_p50_now_us'], r['graph_p50_recorded_us'], r['graph_ratio'])} | "
                     f"{trio(r['graph_fastest_now_us'], r['graph_fastest_recorded_us'], r['graph_fastest_ratio'] or 0)} | "
                     f"{trio(r['eager_p50_now_us'], r['eager_p50_recorded_us'], r['eager_ratio'])} | "
                     f"{trio(r['speedup_now'], r['speedup_recorded'], r['speedup_ratio'], '.2f')} | "
                     f"{trio(r['fastest_speedup_now'], r['fastest_speedup_recorded'], r['fastest_speedup_ratio'] or 0, '.2f')} | "
                     f"{r['modes_now']} / {r['modes_recorded']} |")
lines += ["", "At the recording's host speed (pairs whose two blocks, and the reading just before them, read within "
          "the band of the recording's fastest host level; the re-run waits up to --max-extra-s for them):", "",
          "| model | batch | target | pairs now / rec | graph now / rec (ratio) | eager now / rec (ratio) | "
          "speedup now / rec (ratio) |", "|---|---|---|---|---|---|---|"]
for data in runs:
    t = data.get("target") or {}
    for r in data["rows"]:
        a, b = r.get("matched_now") or {}, r.get("matched_recorded") or {}
        lines.append(f"| {data['model']} | {r['batch_size']} | {t.get('reading', '-')} {t.get('level_us', 0):.1f} µs "
                     f"±{t.get('band_pct', 0):g}% | {a.get('pairs', 0)} / {b.get('pairs', 0)} | "
                     f"{pair(a.get('graph_us'), b.get('graph_us'))} | {pair(a.get('eager_us'), b.get('eager_us'))} | "
                     f"{pair(a.get('speedup'), b.get('speedup'), '.2f')} |")
lines += ["", "The graph call in two parts (median over blocks): submit = host work until the call returned, "
          "wait = until the GPU was done:", "",
          "| model | batch | graph p50 now / rec (ratio) | submit now / rec (ratio) | wait now / rec (ratio) |",
          "|---|---|---|---|---|"]
for data in runs:
    for r in data["rows"]:
        lines.append(f"| {data['model']} | {r['batch_size']} | {pair(r['graph_p50_now_us'], r['graph_p50_recorded_us'])} | "
                     f"{pair(r.get('graph_submit_now_us'), r.get('graph_submit_recorded_us'))} | "
                     f"{pair(r.get('graph_wait_now_us'), r.get('graph_wait_recorded_us'))} |")
from graphlab.timing.repro_report import check_verdict
lines += ["", "| model | graph p50 within 3% | graph wait within 3% | graph p50 in the fastest mode within 3% | "
          "paired speedup within 10% | fastest-mode speedup within 10% | graph at the recorded host speed within 3% | "
          "speedup at the recorded host speed within 10% | --check | host speed now | host speed recorded |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
for model, m in summary["models"].items():
    g = m["goals"]
    lines.append(f"| {model} | {g['graph_p50_within_3pct']} | {g.get('graph_wait_within_3pct')} | "
                 f"{g['graph_p50_in_fastest_mode_within_3pct']} | {g['paired_speedup_within_10pct']} | "
                 f"{g['fastest_mode_speedup_within_10pct']} | {g.get('graph_p50_at_recorded_host_speed_within_3pct')} | "
                 f"{g.get('speedup_at_recorded_host_speed_within_10pct')} | {check_verdict(g)} | {m['host_now']} | "
                 f"{m['host_recorded']} |")
lines += ["", "| step | model | seconds |", "|---|---|---|", *(f"| {s} | {m} | {t} |" for s, m, t in parts)]
(out / "repro_summary.json").write_text(json.dumps(summary, indent=1))
(out / "repro_summary.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
summary_rc=$?

echo "== env"; cat "$OUT/env.log"
echo "== record (rc=$record_rc)"; grep -E "^\[record\] (wrote|.*failed)|x  |modes:|host speed|Error|error" "$OUT/record.log" 2>/dev/null | tail -30
echo "== repro (rc=$repro_rc)"; grep -E "goals:|host speed|failed|Error|error" "$OUT/repro.log" | tail -20
exit $(( record_rc != 0 || repro_rc != 0 || summary_rc != 0 ))
