# Sourced by the device scripts (gpu_validate.sh, gpu_run.sh, ...): the environment every GPU run
# needs, and $OUT/env.txt saying what the machine is. Expects OUT to be set.
#
# The lent GPU machine has torch, pandas and cuda-bindings but none of IPython, plotly, graphviz, the widget
# packages or starlette/uvicorn, and no Graphviz `dot`. Fetch them once, here, into the git-ignored .whl/,
# and name `.whl` in the device call's `carry` (about 24 MB):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl/nb ipython==9.18.1 ipython_pygments_lexers traitlets decorator jedi parso matplotlib_inline pexpect \
#     ptyprocess prompt_toolkit wcwidth stack_data asttokens executing pure_eval plotly graphviz anywidget \
#     ipywidgets psygnal comm widgetsnbextension jupyterlab_widgets starlette uvicorn
#   (mkdir -p .whl/gv && cd .whl/gv && apt-get download graphviz libgvc6 libcgraph6 libcdt5 libpathplan4 \
#     libxdot4 libltdl7 liblab-gamut1 libgts-0.7-5 libann0 libgvpr2)     # Debian's `dot`, unpacked under /tmp/gv
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TQDM_DISABLE=1
mkdir -p "$OUT"
if ! python3 -c "import IPython" 2>/dev/null && ls .whl/*/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
if ! command -v dot >/dev/null 2>&1 && ls .whl/gv/*.deb >/dev/null 2>&1; then
  for f in .whl/gv/*.deb; do dpkg -x "$f" /tmp/gv; done
  export PATH="/tmp/gv/usr/bin:$PATH" LD_LIBRARY_PATH="/tmp/gv/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    GVBINDIR=/tmp/gv/usr/lib/x86_64-linux-gnu/graphviz
  dot -c 2>/dev/null
fi
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "from importlib.metadata import version as v; print('cuda-bindings', v('cuda-bindings'))" 2>&1
  python3 -c "import IPython; print('IPython', IPython.__version__)" 2>&1
  python3 -c "import torchvision; print('torchvision', torchvision.__version__)" 2>&1
  dot -V 2>&1
  python3 -c "import plotly, anywidget, graphviz; print('plotly', plotly.__version__, 'anywidget', anywidget.__version__)" 2>&1
  python3 -m graphlab about
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
