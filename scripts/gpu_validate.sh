#!/usr/bin/env bash
# Whole-project GPU validation, for the lent GPU machine (the device tool), from the repository root:
# every test marked `gpu`, then the notebooks live (each code cell through IPython; cells that only
# draw or tabulate with packages that machine lacks count as skipped). Logs and a summary go to $OUT.
#
#   OUT=/tmp/out bash scripts/gpu_validate.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-validate}
source scripts/gpu_env.sh

timeout "${TEST_S:-300}" python3 -m pytest -m gpu tests/gpu -q -rfE --tb=short -p no:cacheprovider > "$OUT/pytest.log" 2>&1
TEST_RC=$?
tail -25 "$OUT/pytest.log"

timeout "${NOTEBOOK_S:-150}" python3 scripts/run_notebooks_live.py 2>&1 | tee "$OUT/notebooks.log"
{
  echo "pytest -m gpu tests/gpu (rc=$TEST_RC): $(grep -E '(passed|failed|error)' "$OUT/pytest.log" | tail -1)"
  grep '^notebook ' "$OUT/notebooks.log"
} | tee "$OUT/summary.txt"
exit $TEST_RC
