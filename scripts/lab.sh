#!/usr/bin/env bash
# Set everything up (scripts/setup.sh) and open JupyterLab on the tutorial notebooks.
# Live mode on a machine with a CUDA GPU; recorded mode (the H200 recordings) without one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
as_root=(); [ "$(id -u)" = 0 ] && as_root=(--allow-root)  # JupyterLab refuses root without it
exec .venv/bin/jupyter lab --notebook-dir=notebooks "${as_root[@]}" "$@"
