#!/usr/bin/env bash
# Set everything up, Chromium for the real-browser test included, and run the whole test suite.
# Tests marked `gpu` skip themselves without a GPU; on a GPU machine they run too.
set -euo pipefail
cd "$(dirname "$0")/.."
GRAPHLAB_BROWSER=1 bash scripts/setup.sh
export TQDM_DISABLE=1
exec .venv/bin/python -m pytest "$@"
