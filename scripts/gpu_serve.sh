#!/usr/bin/env bash
# Serving under load (issue 14) on the lent GPU machine, from the repository root; results under $OUT.
#
#   OUT=/tmp/out bash scripts/gpu_serve.sh            # all three steps, about 5 minutes on an H200
#   OUT=/tmp/out STEPS="tests" bash scripts/gpu_serve.sh   # or any of: tests record http
#
#   tests   pytest tests/gpu/test_gpu_serve.py                                   ~60-90 s  -> $OUT/pytest_serve.log
#   record  graphlab record --models serving (the recording notebook 09 reads)   ~150 s    -> $OUT/recordings/<gpu>/serving
#   http    a real uvicorn server process (python -m graphlab.serve) driven over sockets by
#           graphlab loadtest --transport http                                   ~25 s     -> $OUT/loadtest_http/
#   hey     bench/bench_serve_http.py: a bare Starlette app (the floor) and the service in each setting, your
#           own model and a flood, each its own process, driven by Debian's `hey` (what `graphlab record
#           --models serving_http` records, written here as a bench result instead)
#           (HEY=path to its extracted binary)                                   ~100 s    -> $OUT/serve_http/
#   inproc  graphlab loadtest --transport direct, graphs+batching only: the in-process capacity beside the
#           HTTP one, in the same lease                                          ~15 s     -> $OUT/loadtest_direct/
#
# uvloop and httptools (the serve extra) make the fast stack; where they are not installed there, carry their
# wheels and set SERVE_WHEELS to their folder (installed to /tmp/site-serve). Here, once, into a git-ignored
# folder that the device call carries (e.g. .stage/serve-bin):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .stage/serve-bin/wheels uvloop httptools
#   (cd .stage/serve-bin && apt-get download hey && dpkg -x hey_*.deb x && mkdir -p bin && cp x/usr/bin/hey bin/)
# then HEY=$PWD/.stage/serve-bin/bin/hey SERVE_WHEELS=.stage/serve-bin/wheels (paths as seen from the script's root).
#
# That machine has no starlette or uvicorn: fetch their wheels once, here, into the git-ignored .whl/serve,
# and name `.whl` in the device call's `carry`:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 -d .whl/serve starlette==1.10.0 uvicorn==0.54.0
# (their other requirements, anyio, h11, click and typing_extensions, are installed there).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-serve}
STEPS=${STEPS:-"tests record http"}
source scripts/gpu_env.sh
if [ -n "${SERVE_WHEELS:-}" ] && ls "$SERVE_WHEELS"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-serve \
    "$SERVE_WHEELS"/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site-serve"
fi
if ! python3 -c "import starlette, uvicorn" 2>/dev/null && ls .whl/serve/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-serve .whl/serve/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site-serve"
fi
python3 -c "import starlette, uvicorn; print('starlette', starlette.__version__, 'uvicorn', uvicorn.__version__)" \
  2>&1 | tee -a "$OUT/env.txt"
RC=0

if [[ " $STEPS " == *" tests "* ]]; then
  timeout 400 python3 -m pytest -m gpu tests/gpu/test_gpu_serve.py -q -rfEs --tb=short -p no:cacheprovider \
    > "$OUT/pytest_serve.log" 2>&1 || RC=1
  tail -15 "$OUT/pytest_serve.log"
fi

if [[ " $STEPS " == *" record "* ]]; then
  timeout 420 python3 -m graphlab record --models serving --out "$OUT/recordings" 2>&1 | tee "$OUT/record_serving.log"
  [ "${PIPESTATUS[0]}" = 0 ] || RC=1
fi

if [[ " $STEPS " == *" hey "* ]]; then
  timeout "${HEY_TIMEOUT:-150}" python3 bench/bench_serve_http.py --hey "${HEY:-hey}" --model gpt --device cuda \
    --flood "${HEY_FLOOD:-512}" --duration-s "${HEY_SECONDS:-2}" \
    --out "$OUT/serve_http" 2>&1 | tee "$OUT/serve_http.log"
  [ "${PIPESTATUS[0]}" = 0 ] || RC=1
fi

if [[ " $STEPS " == *" inproc "* ]]; then
  timeout 60 python3 -m graphlab loadtest --model gpt --settings graphs+batching --transport direct \
    --rates 1000 1500 2000 3000 4000 --duration 1 --no-progress --out "$OUT/loadtest_direct" 2>&1 \
    | tee "$OUT/loadtest_direct.log" || RC=1
fi

if [[ " $STEPS " == *" http "* ]]; then
  PORT=${PORT:-18123}
  python3 -m graphlab.serve --model gpt --setting graphs+batching --port "$PORT" > "$OUT/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 120); do
    python3 -c "import httpx,sys; sys.exit(httpx.get('http://127.0.0.1:$PORT/healthz').status_code != 200)" \
      2>/dev/null && break
    sleep 0.5
  done
  timeout 120 python3 -m graphlab loadtest --transport http --url "http://127.0.0.1:$PORT" \
    --rates ${HTTP_RATES:-500 1000 2000 4000 8000} --duration "${HTTP_SECONDS:-1.5}" --no-progress \
    --out "$OUT/loadtest_http" 2>&1 \
    | tee "$OUT/loadtest_http.log" || RC=1
  kill "$SERVER" 2>/dev/null
  wait "$SERVER" 2>/dev/null
fi
exit $RC
