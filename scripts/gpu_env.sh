# Sourced by the device scripts (gpu_validate.sh, gpu_capture_check.sh): the environment every GPU run
# needs, and $OUT/env.txt saying what the machine is. Expects OUT to be set.
#
# The lent GPU machine has torch and cuda-bindings but no IPython (the magic tests and the live
# notebooks need it). Fetch its wheels once, here, into the git-ignored .whl/capture, and name `.whl`
# in the device call's `carry`:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 -d .whl/capture ipython==9.18.1 ipython_pygments_lexers traitlets \
#     decorator jedi parso matplotlib_inline pexpect ptyprocess prompt_toolkit wcwidth pygments \
#     stack_data asttokens executing pure_eval
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TQDM_DISABLE=1
mkdir -p "$OUT"
if ! python3 -c "import IPython" 2>/dev/null && ls .whl/capture/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/capture/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "from importlib.metadata import version as v; print('cuda-bindings', v('cuda-bindings'))" 2>&1
  python3 -c "import IPython; print('IPython', IPython.__version__)" 2>&1
  python3 -c "import torchvision; print('torchvision', torchvision.__version__)" 2>&1
  python3 -m graphlab about
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
