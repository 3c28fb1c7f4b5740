#!/usr/bin/env bash
# GPU check of the latency lab, for the lent GPU machine (the device tool), from the repository root:
#   1. pytest -m gpu tests/gpu/test_timing.py  (short sweep with sane numbers, kernel counts, timeline)
#   2. python3 -m graphlab record --out $OUT/rec --models mlp cnn gpt resnet18 (sweeps at batch sizes 1..64),
#      packed into $OUT/recordings.tar.gz (unpack it under data/recordings/ on the dev machine)
#   3. bench/bench_overhead.py  (CapturedGraph vs raw replay vs torch.compile reduce-overhead)
# Logs go to $OUT/*.log; a summary is printed at the end. Each step has its own time limit so
# one slow step cannot take the others down with it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpu-latency-check}"
mkdir -p "$OUT"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 TQDM_MININTERVAL=5
BATCH_SIZES="${BATCH_SIZES:-1 2 4 8 16 32 64}"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; date -u; } > "$OUT/env.log" 2>&1

timeout "${PYTEST_S:-60}" python3 -m pytest -m gpu tests/gpu/test_timing.py -v -p no:cacheprovider > "$OUT/pytest_timing.log" 2>&1
pytest_rc=$?

timeout "${RECORD_S:-150}" python3 -m graphlab record --out "$OUT/rec" --models ${RECORD_MODELS:-mlp cnn gpt resnet18} --batch-sizes $BATCH_SIZES > "$OUT/record.log" 2>&1
record_rc=$?
if [ -d "$OUT/rec" ]; then tar -C "$OUT/rec" -czf "$OUT/recordings.tar.gz" . && rm -rf "$OUT/rec"; fi

timeout "${BENCH_S:-80}" python3 bench/bench_overhead.py --models ${BENCH_MODELS:-mlp gpt} --batch-size 1 \
  --out "$OUT/bench_overhead.json" > "$OUT/bench_overhead.log" 2>&1
bench_rc=$?

echo "== env";    cat "$OUT/env.log"
echo "== pytest (rc=$pytest_rc)"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" "$OUT/pytest_timing.log" | tail -15
echo "== record (rc=$record_rc)"; tail -8 "$OUT/record.log"; ls -la "$OUT"
echo "== bench (rc=$bench_rc)";   tail -22 "$OUT/bench_overhead.log"
exit $(( pytest_rc != 0 || record_rc != 0 || bench_rc != 0 ))
