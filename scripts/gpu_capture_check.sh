#!/usr/bin/env bash
# Device script for the capture engine (issue 3): GPU tests, then `graphlab record`, results under $OUT.
#
#   GRAPHLAB_GIT_COMMIT=$(git rev-parse HEAD) OUT=/tmp/out bash scripts/gpu_capture_check.sh [record args...]
#
# Writes: $OUT/env.txt, $OUT/pytest.log, $OUT/record.log, $OUT/notebooks.log, $OUT/recordings.tar.gz
# (data/recordings layout), $OUT/summary.txt. Time limits keep the whole run under ~280 s (TEST_S, RECORD_S to change them).
set -uo pipefail
OUT=${OUT:-out/gpu-capture}
TEST_S=${TEST_S:-150}
RECORD_S=${RECORD_S:-120}
source scripts/gpu_env.sh

TESTS="tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_census.py tests/gpu/test_gpu_failures.py tests/gpu/test_gpu_magic.py"
timeout "$TEST_S" python3 -m pytest -m gpu $TESTS -q -rfE --tb=short -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log"
TEST_RC=${PIPESTATUS[0]}

timeout "$RECORD_S" python3 -m graphlab record --out "$OUT/rec" "$@" 2>&1 | tee "$OUT/record.log"
RECORD_RC=${PIPESTATUS[0]}


# The notebooks, live: every code cell through IPython (scripts/run_notebooks_live.py).
GRAPHLAB_RECORDINGS="$OUT/rec" timeout 100 python3 scripts/run_notebooks_live.py notebooks/01_first_capture.ipynb \
  notebooks/02_pitfalls.ipynb 2>&1 | tee "$OUT/notebooks.log"

tar -czf "$OUT/recordings.tar.gz" -C "$OUT/rec" . 2>/dev/null
rm -rf "$OUT/rec"
{
  echo "pytest rc=$TEST_RC: $(grep -E '(passed|failed|error)' "$OUT/pytest.log" | tail -1)"
  echo "record rc=$RECORD_RC: $(grep -c '^\[record\] wrote' "$OUT/record.log") recording(s) written"
  grep '^notebook ' "$OUT/notebooks.log"
} | tee "$OUT/summary.txt"
