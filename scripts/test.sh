#!/usr/bin/env bash
# Set everything up, Chromium for the real-browser test included, and run the whole test suite.
# Tests marked `gpu` skip themselves without a GPU; on a GPU machine they run too. Tests marked `ray` start a
# local Ray (about 40 s in all on 2 cores); `-m "not ray"` leaves them out.
set -euo pipefail
cd "$(dirname "$0")/.."
GRAPHLAB_BROWSER=1 GRAPHLAB_RAY=1 bash scripts/setup.sh  # Ray Serve for tests/test_serve_ray.py
bash scripts/docs.sh --install-only  # the docs extra: tests/browser/test_docs_site_browser.py builds the site
export TQDM_DISABLE=1
exec .venv/bin/python -m pytest "$@"
