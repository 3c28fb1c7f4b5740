"""Run notebooks top to bottom through IPython on a GPU machine, keep every output, and check them.

    python3 scripts/run_notebooks_live.py [--answers] [--out DIR] [NOTEBOOK ...]   (default: every notebooks/*.ipynb)

The GPU machine has IPython but no Jupyter kernel stack (nbclient, ipykernel, pyzmq), so this runner is the kernel:
each notebook runs in a fresh `InteractiveShell`, and what a notebook would show is caught where IPython hands it
out: the display publisher (`display(...)`, figures, drawings, widgets), the display hook (a cell's value, with
every mimetype its formatters give) and the cell's stdout and stderr. The outputs are written as an executed
notebook (`DIR/NAME.ipynb`, default `out/live`) and checked with `graphlab.output_check` (live mode: no recorded
banner needed), exactly as `graphlab tour` checks the recorded run.

Exercises start unanswered, as a learner meets them ("Not answered yet"). With `--answers` the answers of
tests/notebook_answers.py are filled in first (`graphlab.tour.fill_answers`), so each check cell judges a real
answer against this GPU's numbers.

Cells that fail only because graphviz, pandas, plotly or the widget packages are missing count as skipped, and so do
cells that need a name such a skipped cell would have defined; each is listed (`NOTEBOOK SKIP PATH cell N: why`).
Prints one `notebook PATH: ...` line per notebook (cells run, skipped, failed, output-check findings), then
`NOTEBOOK FAIL ...` for every failed cell and `NOTEBOOK FINDING ...` for every finding; exits 1 on any.
"""
from __future__ import annotations

import contextlib
import copy
import glob
import io
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

# figures as their own mimetype (what a notebook front end receives), never a browser window
os.environ.setdefault("PLOTLY_RENDERER", "plotly_mimetype")
os.environ.setdefault("TQDM_DISABLE", "1")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

MISSING = ("graphviz", "pandas", "plotly", "jinja2", "ipywidgets", "anywidget")
REPO = Path(__file__).resolve().parent.parent


class _Outputs:
    """The outputs of the cell being run, in nbformat's shape."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.count = 0
        self.traceback: list[str] = []

    def stream(self, name: str, text: str) -> None:
        if not text:
            return
        if self.items and self.items[-1].get("output_type") == "stream" and self.items[-1]["name"] == name:
            self.items[-1]["text"] += text
        else:
            self.items.append({"output_type": "stream", "name": name, "text": text})

    def display(self, data: dict[str, Any], metadata: dict[str, Any] | None = None) -> None:
        self.items.append({"output_type": "display_data", "data": _json_safe(data), "metadata": metadata or {}})

    def result(self, data: dict[str, Any], metadata: dict[str, Any] | None = None) -> None:
        self.items.append({"output_type": "execute_result", "data": _json_safe(data), "metadata": metadata or {},
                           "execution_count": self.count})


def _json_safe(data: dict[str, Any]) -> dict[str, Any]:
    """A mime bundle as JSON holds it (bytes of a PNG as base64 text)."""
    import base64

    out = {}
    for mime, value in data.items():
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        out[mime] = value
    return out


def _shell(outputs: _Outputs) -> InteractiveShell:
    """A fresh shell whose display publisher and display hook write into `outputs`."""
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()

    def publish(data: dict[str, Any], metadata: dict[str, Any] | None = None, *args: Any, **kwargs: Any) -> None:
        outputs.display(data, metadata)

    shell.display_pub.publish = publish  # type: ignore[method-assign]
    hook = shell.displayhook

    def write_format_data(format_dict: dict[str, Any], md_dict: dict[str, Any] | None = None) -> None:
        outputs.result(format_dict, md_dict)

    hook.write_format_data = write_format_data  # type: ignore[method-assign]
    hook.write_output_prompt = lambda: None  # type: ignore[method-assign]

    def keep_traceback(exc_tuple: Any = None, *args: Any, **kwargs: Any) -> None:
        """A failed cell's traceback goes into its error output (a kernel's), not into its printed text."""
        etype, value, tb = exc_tuple or sys.exc_info()
        outputs.traceback = traceback.format_exception(etype, value, tb)

    shell.showtraceback = keep_traceback  # type: ignore[method-assign]
    shell.showsyntaxerror = lambda *args, **kwargs: keep_traceback()  # type: ignore[method-assign]
    return shell


def run(path: str, answers: bool = False, out_dir: Path | None = None) -> tuple[int, list[str]]:
    """Run one notebook; return (failed cells, output-check findings)."""
    from graphlab.output_check import output_problems

    nb = json.load(open(path))
    if answers:
        sys.path.insert(0, str(REPO / "tests"))
        from notebook_answers import ANSWERS

        from graphlab.tour import fill_answers

        fill_answers(nb, ANSWERS.get(os.path.basename(path), {}))
    executed = copy.deepcopy(nb)
    outputs = _Outputs()
    shell = _shell(outputs)
    ran = skipped = failed = 0
    for i, cell in enumerate(executed["cells"]):
        if cell["cell_type"] != "code":
            continue
        outputs.items, outputs.count, outputs.traceback = [], outputs.count + 1, []
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            result = shell.run_cell("".join(cell["source"]), silent=False, store_history=True)
        outputs.stream("stdout", stdout.getvalue())
        outputs.stream("stderr", stderr.getvalue())
        err = result.error_in_exec or result.error_before_exec
        # streams first, as a notebook shows them before the cell's value, in the order they came
        streams = [o for o in outputs.items if o["output_type"] == "stream"]
        rich = [o for o in outputs.items if o["output_type"] != "stream"]
        cell["outputs"], cell["execution_count"] = streams + rich, outputs.count
        if err is None:
            ran += 1
        elif any(m in f"{type(err).__name__} {err}" for m in MISSING):
            skipped += 1
            print(f"NOTEBOOK SKIP {path} cell {i}: {type(err).__name__}: {err}")
        elif isinstance(err, NameError) and skipped:
            skipped += 1  # uses a name an earlier skipped cell would have defined
            print(f"NOTEBOOK SKIP {path} cell {i}: {err} (defined by a skipped cell)")
        else:
            failed += 1
            cell["outputs"].append({"output_type": "error", "ename": type(err).__name__, "evalue": str(err),
                                    "traceback": outputs.traceback})
            print(f"NOTEBOOK FAIL {path} cell {i}: {type(err).__name__}: {err}")
    recorded = bool(getattr(shell.user_ns.get("gl"), "current_mode", lambda: None)() and
                    shell.user_ns["gl"].current_mode().recorded)
    InteractiveShell.clear_instance()  # the next InteractiveShell.instance() is a plain one, not this patched shell
    problems = [p for p in output_problems(executed, recorded=recorded) if "the cell failed" not in p]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / os.path.basename(path)).write_text(json.dumps(executed, indent=1, default=str))
    for problem in problems:
        print(f"NOTEBOOK FINDING {path} {problem}")
    print(f"notebook {path}: {ran} cells ran {'recorded' if recorded else 'live'}, {skipped} skipped (a package "
          f"missing here), {failed} failed; output check: {len(problems)} finding(s)")
    return failed, problems


def main(argv: list[str]) -> int:
    with_answers = "--answers" in argv
    out_dir = Path("out/live")
    if "--out" in argv:
        out_dir = Path(argv[argv.index("--out") + 1])
        argv = argv[: argv.index("--out")] + argv[argv.index("--out") + 2:]
    paths = [a for a in argv if a != "--answers"] or sorted(glob.glob("notebooks/*.ipynb"))
    bad = 0
    for path in paths:
        failed, problems = run(path, with_answers, out_dir)
        bad += failed + len(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
