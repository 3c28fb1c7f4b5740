#!/usr/bin/env bash
# Set everything up (scripts/setup.sh) and open JupyterLab on the tutorial notebooks.
# Live mode on a machine with a CUDA GPU; recorded mode (the H200 recordings) without one.
# JupyterLab's news prompt and update check are off (scripts/lab_settings.py: no toast, no network).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python scripts/lab_settings.py
as_root=(); [ "$(id -u)" = 0 ] && as_root=(--allow-root)  # JupyterLab refuses root without it
exec .venv/bin/jupyter lab --notebook-dir=notebooks --LabApp.news_url=None \
  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate "${as_root[@]}" "$@"
