#!/usr/bin/env bash
# The real-browser test: JupyterLab 4 on 127.0.0.1, driven by Debian's headless Chromium through
# playwright-core (npm; no browser download). Installs what it needs, then runs every test marked `browser`.
#
#   needs: chromium (apt), node + npm (apt: nodejs npm), `npm ci` in tests/browser (playwright-core),
#          graphviz's `dot` and the .venv that scripts/setup.sh makes.
#   GRAPHLAB_SCREENSHOT_DIR  where the screenshots go (default out/browser)
#   extra arguments go to pytest, e.g. `bash scripts/browser_test.sh -k thousand`
set -euo pipefail
cd "$(dirname "$0")/.."
GRAPHLAB_BROWSER=1 bash scripts/setup.sh
if [ ! -d tests/browser/node_modules/playwright-core ]; then
  (cd tests/browser && npm ci --silent --no-audit --no-fund)
fi
export TQDM_DISABLE=1
exec .venv/bin/python -m pytest -m browser -s -p no:cacheprovider "$@"
