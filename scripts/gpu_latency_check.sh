#!/usr/bin/env bash
# GPU check of the latency lab, for the lent GPU machine (the device tool), from the repository root:
#   1. pytest -m gpu tests/gpu/test_timing.py  (short sweep with sane numbers, kernel counts, timeline)
#   2. python3 -m graphlab record, one fresh process per zoo model (a process that has run torch.profiler
#      launches kernels more slowly, so a model recorded after another one's profiling would be biased),
#      sweeps at batch sizes 1..64; packed into $OUT/recordings.tar.gz (unpack under data/recordings/)
#   3. bench/bench_overhead.py: what one call costs, eight ways (eager, raw replay, raw copy+replay,
#      CapturedGraph call/unchecked/replay, make_graphed_callables, torch.compile reduce-overhead), the
#      tiny graph and the zoo at batch 1 and 8 (BENCH_MODELS narrows it; ~2-2.5 min with compile)
# The paired method's reproducibility check is scripts/gpu_repro_check.sh.
# Logs go to $OUT/*.log (at most 8 files come back); a summary is printed at the end. Each step has
# its own time limit so one slow step cannot take the others down with it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpu-latency-check}"
mkdir -p "$OUT/bench"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 TQDM_MININTERVAL=5
BATCH_SIZES="${BATCH_SIZES:-1 2 4 8 16 32 64}"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; nproc; date -u; } > "$OUT/env.log" 2>&1

timeout "${PYTEST_S:-45}" python3 -m pytest -m gpu tests/gpu/test_timing.py -v -p no:cacheprovider > "$OUT/pytest_timing.log" 2>&1
pytest_rc=$?

record_rc=0
for model in ${RECORD_MODELS:-mlp cnn gpt resnet18}; do
  timeout "${RECORD_S:-55}" python3 -m graphlab record --out "$OUT/rec" --models "$model" --batch-sizes $BATCH_SIZES >> "$OUT/record.log" 2>&1 \
    || { record_rc=$?; echo "[check] record $model failed: rc=$record_rc" >> "$OUT/record.log"; }
done
if [ -d "$OUT/rec" ]; then tar -C "$OUT/rec" -czf "$OUT/recordings.tar.gz" . && rm -rf "$OUT/rec"; fi

timeout "${BENCH_S:-240}" python3 bench/bench_overhead.py --models ${BENCH_MODELS:-mlp cnn gpt resnet18} \
  --out "$OUT/bench" > "$OUT/bench.log" 2>&1
bench_rc=$?

echo "== env";    cat "$OUT/env.log"
echo "== pytest (rc=$pytest_rc)"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|Error" "$OUT/pytest_timing.log" | tail -15
echo "== record (rc=$record_rc)"; grep -E "^\[record\]   |wrote|failed|Error|error" "$OUT/record.log" | tail -14; ls -la "$OUT"
echo "== bench (rc=$bench_rc)";   grep -E "^\[overhead\]|^\| " "$OUT/bench.log" | head -30
exit $(( pytest_rc != 0 || record_rc != 0 || bench_rc != 0 ))
