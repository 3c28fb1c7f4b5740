#!/usr/bin/env bash
# Set up graphlab on a fresh Debian/Ubuntu machine: system packages, a virtual environment in .venv,
# PyTorch, and graphlab itself with its test extras. Safe to run again (it skips what is done).
#
#   GRAPHLAB_TORCH   the torch requirement to install, with pip options if needed (default: torch==2.13.0, a CPU
#                    build; on a GPU machine the CUDA build that matches your driver, e.g.
#                    "torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130"). Only used when .venv has
#                    no torch yet: to switch builds, `rm -rf .venv` first.
#   GRAPHLAB_BROWSER =1 also installs Chromium and the npm packages of the real-browser test, and Debian's hey
#   GRAPHLAB_RAY     =1 also installs the ray extra (Ray Serve, for tests/test_serve_ray.py; scripts/test.sh sets it)
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v dot >/dev/null 2>&1 || need_apt+=(graphviz)
if [ "${GRAPHLAB_BROWSER:-0}" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
  command -v hey >/dev/null 2>&1 || need_apt+=(hey)  # the outside HTTP load generator (tests/test_serve_over_http.py)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing system packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "== installing ${GRAPHLAB_TORCH:-torch==2.13.0}"
  # split into words on purpose: GRAPHLAB_TORCH may carry pip options, e.g.
  #   GRAPHLAB_TORCH="torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130"
  read -r -a torch_args <<< "${GRAPHLAB_TORCH:-torch==2.13.0}"
  .venv/bin/pip install -q "${torch_args[@]}"
fi
extras="test,serve"; [ "${GRAPHLAB_RAY:-0}" = 1 ] && extras="$extras,ray"
echo "== installing graphlab (editable, with the extras $extras)"
.venv/bin/pip install -q -e ".[$extras]"

if [ "${GRAPHLAB_BROWSER:-0}" = 1 ] && [ -f tests/browser/package-lock.json ]; then
  echo "== installing the browser test's npm packages"
  (cd tests/browser && npm ci --silent --no-audit --no-fund)
fi
.venv/bin/graphlab about
