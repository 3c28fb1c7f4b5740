"""Run the tutorial notebooks without a browser (`graphlab tour`): for servers, CI and a quick check.

Each notebook is executed top to bottom in a fresh kernel (live on a GPU machine, recorded mode
without one); the executed copy is written as .ipynb and .html to the output folder. Widget state is
not stored (it would add megabytes of JavaScript to each file); figures and drawings are kept. The
HTML loads nothing from the network (no CDN scripts: `notebook_html`), so it opens offline.

Size: plotly.js is 4.6 MB. The tour's .ipynb files keep each figure as plotly's JSON (JupyterLab draws it with its
own plotly.js), and each HTML page carries plotly.js once, however many figures it has (`notebook_html`).
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

from graphlab.clock import Stopwatch
from graphlab.errors import BadInputError

#: the nbconvert template of the tour's HTML: the lab template without its CDN scripts
OFFLINE_TEMPLATE = Path(__file__).resolve().parent / "tour_offline.html.j2"


def notebooks_dir() -> Path:
    """The tutorial notebooks: the copy installed with the package, else `notebooks/` of a checkout."""
    package_dir = Path(__file__).resolve().parent
    installed = package_dir / "_data" / "notebooks"
    if installed.is_dir():
        return installed
    return package_dir.parent / "notebooks"


def find_notebooks(names: Sequence[str] = ()) -> list[Path]:
    """Notebook paths: the ones named (paths or names under notebooks/), else all, in reading order."""
    base = notebooks_dir()
    if not names:
        found = sorted(p for p in base.glob("*.ipynb") if not p.name.startswith("_"))
        if not found:
            raise BadInputError(f"no notebooks found under {base}: run from a checkout of graphlab (its notebooks/ "
                                "folder) or name the notebooks to run")
        return found
    paths = []
    for name in names:
        path = Path(name)
        if not path.exists():
            path = base / (name if name.endswith(".ipynb") else f"{name}.ipynb")
        if not path.exists():
            raise BadInputError(f"no notebook {name!r} (looked in . and {base}); give a path to an .ipynb file or the "
                                "name of one in notebooks/")
        paths.append(path)
    return paths


def fill_answers(nb: Any, answers: dict[str, str]) -> None:
    """Put `answers` (name -> Python source) into the notebook's exercise cells, in place.

    `nb` is an nbformat notebook or the same as plain JSON (a dict whose cells' sources are strings or lists
    of lines). An exercise cell is tagged `exercise` and starts its answer as `name = None  # hint`
    (`graphlab.ui.exercise`); that line becomes `name = <answer>`.

    Raises:
        BadInputError: an answer names no `name = None` line of an exercise cell.
    """
    left = dict(answers)
    for cell in nb["cells"]:
        if "exercise" not in cell.get("metadata", {}).get("tags", []):
            continue
        source = cell["source"]
        lines = ("".join(source) if isinstance(source, list) else source).splitlines()
        for i, line in enumerate(lines):
            match = _ANSWER_LINE.match(line)
            if match and match.group(1) in left:
                lines[i] = f"{match.group(1)} = {left.pop(match.group(1))}"
        cell["source"] = "\n".join(lines)
    if left:
        raise BadInputError(f"no exercise cell starts {sorted(left)} as None: the notebook changed; update its answers")


_ANSWER_LINE = re.compile(r"^([A-Za-z_]\w*) = None\b")


#: how an executed notebook keeps its plotly figures: "html" also as HTML (plotly.js inlined with the first figure:
#: what the docs site's pages are made from), "json" as plotly's JSON only (`graphlab tour`: no plotly.js in the .ipynb)
FIGURE_FORMS = {"html": "plotly_mimetype+notebook", "json": "plotly_mimetype"}


def execute_notebook(path: Path, out_dir: Path, timeout_s: int = 600, answers: dict[str, str] | None = None,
                     figures: str = "html") -> float:
    """Execute one notebook in a fresh kernel, write `<out_dir>/<name>.ipynb` and `.html`; return seconds.

    `answers` fills the exercises in first (`fill_answers`); without it they run unanswered. `figures`: "html" keeps
    each plotly figure as HTML too (plotly's notebook renderer: plotly.js inlined once, with the first figure),
    "json" as plotly's JSON only (the .ipynb holds no plotly.js; the .html page still carries it once). A
    `PLOTLY_RENDERER` set in the environment wins over either.

    Raises:
        BadInputError: a cell failed (the notebook, as given, does not run here); the partial output is written.
    """
    import nbclient
    import nbformat
    from jupyter_client import KernelManager

    if figures not in FIGURE_FORMS:
        raise BadInputError(f"figures must be one of {', '.join(FIGURE_FORMS)}, not {figures!r}")
    nb = nbformat.read(path, as_version=4)
    if answers:
        fill_answers(nb, answers)
    started = Stopwatch().start()
    with _kernel_env("PLOTLY_RENDERER", os.environ.get("PLOTLY_RENDERER") or FIGURE_FORMS[figures]), \
            tempfile.TemporaryDirectory(prefix="graphlab-kernel-") as sockets:
        # local IPC sockets: nothing listens on the network, and ipykernel has no TCP warning to print
        km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k"))
        client = nbclient.NotebookClient(
            nb,
            km=km,
            timeout=timeout_s,
            store_widget_state=False,
            resources={"metadata": {"path": str(path.parent)}},
        )
        try:
            client.execute()
        except nbclient.exceptions.CellExecutionError as exc:
            nbformat.write(nb, out_dir / path.name)
            last_line = str(exc).strip().splitlines()[-1] if str(exc).strip() else "cell failed"
            raise BadInputError(
                f"{path.name}: a cell failed ({last_line}); partial output in {out_dir / path.name}"
            ) from None
        finally:
            if km.has_kernel:  # nbclient leaves a kernel it did not create running
                km.shutdown_kernel(now=True)
    seconds = started.stop()
    scrub_paths(nb)
    nbformat.write(nb, out_dir / path.name)
    (out_dir / path.with_suffix(".html").name).write_text(notebook_html(nb), encoding="utf-8")
    return seconds


@contextlib.contextmanager
def _kernel_env(name: str, value: str) -> Iterator[None]:
    """`name=value` in the environment the kernel starts with, and back as it was afterwards."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


#: a cell's file as ipykernel names it in warnings and tracebacks: /tmp/ipykernel_1234/567890.py
_KERNEL_CELL = re.compile(r"/[^\s\"']*/ipykernel_\d+/\d+\.py")


def scrub_paths(nb: Any, root: Path | None = None) -> None:
    """Take this machine's paths out of an executed notebook's outputs, in place: the repository's absolute path
    becomes relative, a kernel cell's temporary file (a warning's `/tmp/ipykernel_1234/5678.py:2:`) becomes
    `<cell>`. The executed copies (the docs site, `graphlab tour`) then hold nothing of the machine that ran them."""
    base = str((root or Path(__file__).resolve().parent.parent)) + os.sep

    def clean(text: str) -> str:
        return _KERNEL_CELL.sub("<cell>", text.replace(base, ""))

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return clean(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = walk(out["text"])
            if "traceback" in out:
                out["traceback"] = walk(out["traceback"])
            for mime, data in out.get("data", {}).items():
                if mime.startswith("text/"):
                    out["data"][mime] = walk(data)


def notebook_html(nb: Any) -> str:
    """An executed notebook as one HTML page that loads nothing from the network, with plotly.js once.

    nbconvert's lab template fetches require.js, MathJax and mermaid from a CDN; `tour_offline.html.j2`
    leaves those scripts out (LaTeX in markdown then shows as typed). plotly's notebook renderer adds
    a MathJax script from cdnjs to every figure (for LaTeX in figure text, which graphlab's figures do
    not use): it is dropped too. Figures kept only as plotly's JSON are drawn into the page, and plotly.js is
    inlined once, before the first figure that needs it, unless an output already carries it (plotly's notebook
    renderer); drawings are SVG and PNG.
    """
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter(template_file=str(OFFLINE_TEMPLATE)).from_notebook_node(page_figures(nb))
    return _PLOTLY_MATHJAX.sub("", str(html))


#: what marks an output that carries plotly.js itself (the bundle's first comment line)
PLOTLY_JS_MARK = "* plotly.js v"
#: what marks an output whose figure is drawn by the page's plotly.js (`graphlab.ui.latency_lab.page_plotly_figure`)
PAGE_FIGURE_MARK = "graphlab-page-figure"


def page_figures(nb: Any) -> Any:
    """A copy of an executed notebook whose plotly figures all show in an HTML export, with plotly.js once: a figure
    kept only as plotly's JSON gets its HTML (no plotly.js of its own), and plotly.js goes before the first output
    that needs it, unless an output already carries it."""
    import copy

    nb = copy.deepcopy(nb)
    first_needing, carried = None, False
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            markup = _joined(data.get("text/html", ""))
            carried = carried or PLOTLY_JS_MARK in markup
            figure = data.get("application/vnd.plotly.v1+json")
            if figure is not None and not markup:
                import plotly.io as pio

                markup = pio.to_html(figure, include_plotlyjs=False, full_html=False, validate=False)
                data["text/html"] = markup
            if first_needing is None and ("Plotly.newPlot" in markup or PAGE_FIGURE_MARK in markup) \
                    and PLOTLY_JS_MARK not in markup:
                first_needing = data
    if first_needing is not None and not carried:
        from plotly.offline import get_plotlyjs

        first_needing["text/html"] = (f'<script type="text/javascript">{get_plotlyjs()}</script>'
                                      + _joined(first_needing["text/html"]))
    return nb


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


_PLOTLY_MATHJAX = re.compile(r"""<script\s+src=["']https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/[^"']*["']\s*>\s*</script>""")


def run_tour(out_dir: Path, notebooks: Sequence[str] = (), timeout_s: int = 600, check: bool = False) -> int:
    """Execute the notebooks in order; print one line each, with what the output check found in it
    (`graphlab.output_check`); return a process exit status (`check`: a finding fails the tour too)."""
    from graphlab.env import has_cuda
    from graphlab.output_check import notebook_problems

    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TQDM_DISABLE", "1")  # progress bars are for people, not logs
    failures = 0
    for path in find_notebooks(notebooks):
        try:
            seconds = execute_notebook(path, out_dir, timeout_s, figures="json")
        except BadInputError as exc:
            failures += 1
            print(f"FAIL {exc}", file=sys.stderr)
            continue
        problems = notebook_problems(out_dir / path.name, recorded=not has_cuda())  # the notebooks set_mode("auto")
        found = f"; output check: {len(problems)} finding(s)" if problems else "; output check: clean"
        print(f"ok   {path.name} ({seconds:.1f} s{found}) -> {out_dir / path.name}")
        for problem in problems:
            print(f"       {problem}")
        failures += bool(check and problems)
    return 1 if failures else 0


__all__ = ["FIGURE_FORMS", "OFFLINE_TEMPLATE", "execute_notebook", "find_notebooks", "notebook_html", "notebooks_dir",
           "page_figures", "run_tour", "scrub_paths"]
