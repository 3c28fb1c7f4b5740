#!/usr/bin/env bash
# Build the documentation site into site/: open site/index.html in a browser (it works from file://, offline,
# and from any static host). Sets up .venv first if it is missing (scripts/setup.sh), installs the `docs`
# extra into it, executes every notebook (recorded mode without a GPU, live with one), and runs
# `mkdocs build --strict` (any warning fails: a broken link, a missing reference, a failing notebook,
# a page that would load something from another host). See docs/docs-site.md.
#
#   bash scripts/docs.sh                   build site/
#   bash scripts/docs.sh --site DIR        build into DIR (other options: --work DIR, --jobs N, --timeout S)
#   bash scripts/docs.sh --install-only    install the docs dependencies into .venv and stop
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
if ! .venv/bin/python scripts/docs_build.py --deps-satisfied; then
  echo "== installing the docs extra into .venv"
  .venv/bin/pip install -q -e ".[docs]"
fi
if [ "${1:-}" = "--install-only" ]; then
  exit 0
fi
export TQDM_DISABLE=1
exec .venv/bin/python scripts/docs_build.py "$@"
