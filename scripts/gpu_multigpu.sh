#!/usr/bin/env bash
# Multi-GPU, all of it, in one device call on the machine at hand (one H200, nvidia-h200-x2, -x4, ...):
#
#   OUT=/tmp/out bash scripts/gpu_multigpu.sh
#
# 1. basics: GPUs, `nvidia-smi topo -m`
# 2. the multi-GPU GPU tests at world size N = every visible GPU (tests/gpu/test_gpu_multigpu.py: collectives
#    captured on every rank, the capture rules, the teardown after capture)
# 3. the measurements (bench/bench_multigpu.py: replicas vs one GPU, TP eager vs graph by world size)
# 4. the distributed recording (graphlab record --models multigpu) -> $OUT/recordings/<machine>/multigpu,
#    e.g. h200 (one GPU) or h200x2; commit it as data/recordings/<machine>/multigpu
# About 4 minutes on 2 H200s; each step has its own time limit (490 s in all, under one device call's 600).
# STEPS="tests record" runs only those steps. NVLink multicast stays off.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-multigpu}
source scripts/gpu_env.sh
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
STEPS=${STEPS:-tests bench record}
TEST_RC=0 BENCH_RC=0 RECORD_RC=0
N=$(python3 -c "import torch; print(torch.cuda.device_count())")
echo "GPUs: $N" | tee "$OUT/summary.txt"
nvidia-smi topo -m > "$OUT/topology.txt" 2>&1

if [[ " $STEPS " == *" tests "* ]]; then
  GRAPHLAB_MULTIGPU_NPROC=all timeout 170 python3 -m pytest -m gpu tests/gpu/test_gpu_multigpu.py -q -rfE \
    --tb=short -p no:cacheprovider > "$OUT/pytest.log" 2>&1
  TEST_RC=$?
  tail -25 "$OUT/pytest.log"
fi
if [[ " $STEPS " == *" bench "* ]]; then
  timeout 170 python3 bench/bench_multigpu.py --out "$OUT/bench" > "$OUT/bench.log" 2>&1
  BENCH_RC=$?
  tail -40 "$OUT/bench.log"
fi
if [[ " $STEPS " == *" record "* ]]; then
  GRAPHLAB_RECORD_TIMEOUT_S=140 timeout 150 python3 -m graphlab record --models multigpu --out "$OUT/recordings" \
    > "$OUT/record.log" 2>&1
  RECORD_RC=$?
  tail -30 "$OUT/record.log"
fi

{
  echo "pytest tests/gpu/test_gpu_multigpu.py at world size $N (rc=$TEST_RC): $(grep -E '(passed|failed|error)' "$OUT/pytest.log" | tail -1)"
  echo "bench (rc=$BENCH_RC): $OUT/bench/bench_multigpu.txt"
  echo "record (rc=$RECORD_RC): $(ls -d "$OUT"/recordings/*/multigpu 2>/dev/null | tr '\n' ' ')"
} | tee -a "$OUT/summary.txt"
exit $(( TEST_RC || BENCH_RC || RECORD_RC ))
