#!/usr/bin/env bash
# The project's GPU runs, by phase, for the lent GPU machine (the device tool), from the repository root.
# Every step has its own time limit and log; recordings go to $OUT/rec (packed as $OUT/rec.tar.gz), logs to
# $OUT/logs (packed as $OUT/logs.tar.gz), so one device call brings everything back in two files.
#
#   OUT=/tmp/out PHASE=timing  bash scripts/gpu_run.sh   # zoo re-record + repro, cache, traffic
#   OUT=/tmp/out PHASE=records bash scripts/gpu_run.sh   # overhead, dense, watch, conditional, serving, multigpu
#   OUT=/tmp/out PHASE=tests   bash scripts/gpu_run.sh   # every GPU test, pitfalls + cells, notebooks live
#   OUT=/tmp/out PHASE=validate bash scripts/gpu_run.sh  # each GPU test file alone, multigpu, notebooks live
#   OUT=/tmp/out PHASE=replicas bash scripts/gpu_run.sh  # multi-GPU bench + record, each test file (cuBLAS workspace first)
#   OUT=/tmp/out PHASE=gputests bash scripts/gpu_run.sh  # each GPU test file in its own process, nothing else
#   OUT=/tmp/out PHASE=notebooks bash scripts/gpu_run.sh # every notebook live, each in its own process (NOTEBOOKS=...),
#                                                        # executed copies in $OUT/live, the output check on each
#
# Timing-sensitive steps run alone, one after another (a second process on the GPU would disturb them).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-run}
PHASE=${PHASE:-tests}
source scripts/gpu_env.sh
export NCCL_NVLS_ENABLE=0
REC="$OUT/rec"; LOGS="$OUT/logs"; mkdir -p "$REC" "$LOGS"
if ! python3 -c "import starlette, uvicorn" 2>/dev/null && ls .whl/serve/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-serve .whl/serve/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site-serve"
fi
step() {  # step NAME LIMIT_S COMMAND...
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s)
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  echo "step $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$LOGS/summary.txt"
  tail -3 "$LOGS/$name.log"
}
record() { step "record_$1" "$2" python3 -m graphlab record --out "$REC" --models "${@:3}"; }
test_files() {  # test_files LIMIT_S BUDGET_S FILE...: each GPU test file once, in its own pytest process, while
  local limit=$1 budget=$2 started n; shift 2  # the phase has time left (BUDGET_S 0: no budget)
  started=$(date +%s)
  for f in "$@"; do
    n=$(basename "$f" .py)
    grep -q "^step $n " "$LOGS/summary.txt" 2>/dev/null && continue
    if [ "$budget" -gt 0 ] && [ $(( $(date +%s) - started )) -gt "$budget" ]; then
      echo "step $n skipped: the phase's time budget is spent" | tee -a "$LOGS/summary.txt"; continue
    fi
    step "$n" "$limit" python3 -m pytest -m gpu "$f" -q -rfE --tb=short -p no:cacheprovider
    grep -E "passed|failed|error" "$LOGS/$n.log" | tail -1 | sed "s/^/  $n: /" | tee -a "$LOGS/summary.txt"
  done
}

case "$PHASE" in
  timing)  # SKIP_REPRO=1, SKIP_CACHE=1, SKIP_TRAFFIC=1 leave a step out; TESTS="tests/gpu/x.py ..." runs those after
    [ -z "${SKIP_REPRO:-}" ] && step repro_check "${REPRO_LIMIT_S:-420}" env OUT="$OUT/repro" EXTRA_S="${EXTRA_S:-25}" \
      MODELS="${MODELS:-mlp cnn gpt encoder resnet18}" bash scripts/gpu_repro_check.sh
    [ -z "${SKIP_CACHE:-}" ] && record cache 100 cache
    [ -z "${SKIP_TRAFFIC:-}" ] && record traffic 170 traffic
    # shellcheck disable=SC2086 # TESTS is a list of paths
    test_files 90 0 ${TESTS:-}
    ;;
  records)
    record overhead 120 overhead
    record dense 150 dense
    record watch 80 watch
    record conditional 70 conditional
    record serving 160 serving
    record multigpu 70 multigpu
    ;;
  tests)
    step pytest_gpu 330 python3 -m pytest -m gpu tests/gpu -q -rfE --tb=short -p no:cacheprovider
    record pitfalls 90 pitfalls cells
    step notebooks_live 120 python3 scripts/run_notebooks_live.py notebooks/00_start_here.ipynb \
      notebooks/01_first_capture.ipynb notebooks/02_pitfalls.ipynb notebooks/04_reading_the_graph.ipynb
    ;;
  replicas)  # the cuBLAS-workspace fix: replicas on one GPU, the multi-GPU measurements, then every test file
    step bench_multigpu 120 python3 bench/bench_multigpu.py --out "$LOGS/bench"
    record multigpu 100 multigpu
    test_files "${TEST_S:-90}" "${BUDGET_S:-200}" tests/gpu/test_gpu_cublas_workspace.py tests/gpu/test_gpu_multigpu.py \
      tests/gpu/test_gpu_graph_cache.py tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_serve.py \
      tests/gpu/test_gpu_failures.py tests/gpu/test_*.py
    ;;
  gputests)  # every GPU test file in its own process, nothing else (BUDGET_S: start no file after that many s)
    # shellcheck disable=SC2086 # GPU_TESTS is a list of paths, those first (the rest follow, each once)
    test_files "${TEST_S:-90}" "${BUDGET_S:-0}" ${GPU_TESTS:-} tests/gpu/test_*.py
    ;;
  validate)  # every GPU test file in its own process (a crash in one cannot hide the others' results)
    test_files "${TEST_S:-110}" "${BUDGET_S:-400}" tests/gpu/test_*.py
    record multigpu 90 multigpu
    record watch 60 watch
    step notebooks_live 60 python3 scripts/run_notebooks_live.py notebooks/00_start_here.ipynb \
      notebooks/01_first_capture.ipynb notebooks/02_pitfalls.ipynb notebooks/04_reading_the_graph.ipynb
    ;;
  notebooks)  # every notebook live through IPython, each in its own process and time limit, while the budget lasts
    started=$(date +%s)
    for nb in ${NOTEBOOKS:-notebooks/*.ipynb}; do
      n=$(basename "$nb" .ipynb)
      if [ $(( $(date +%s) - started )) -gt "${BUDGET_S:-480}" ]; then
        echo "step nb_$n skipped: the phase's time budget is spent" | tee -a "$LOGS/summary.txt"; continue
      fi
      step "nb_$n" "${NB_S:-240}" python3 scripts/run_notebooks_live.py --out "$OUT/live" ${NB_ARGS:-} "$nb"
      grep -E "^(notebook|NOTEBOOK)" "$LOGS/nb_$n.log" | tee -a "$LOGS/summary.txt"
    done
    ;;
  *) echo "unknown PHASE $PHASE"; exit 2 ;;
esac
[ -d "$OUT/repro" ] && cp -r "$OUT/repro" "$LOGS/repro" 2>/dev/null
tar -C "$REC" -czf "$OUT/rec.tar.gz" . ; tar -C "$LOGS" -czf "$OUT/logs.tar.gz" .
rm -rf "$REC" "$LOGS" "$OUT/repro"
ls -la "$OUT"
