"""Run notebooks' code cells live through IPython, on a GPU machine (the drawing stack carried as wheels).

    python3 scripts/run_notebooks_live.py [--answers] [NOTEBOOK ...]     (default: every notebooks/*.ipynb)

Exercises start unanswered, as a learner meets them ("Not answered yet"). With `--answers` the answers of
tests/notebook_answers.py are filled in first (`graphlab.tour.fill_answers`), so each check cell judges a real
answer against this GPU's numbers: the line it prints says whether the recorded answer still holds live.

Cells that fail only because graphviz, pandas, plotly or the widget packages are missing count as
skipped, and so do cells that need a name such a skipped cell would have defined; each skipped cell is
listed (`NOTEBOOK SKIP PATH cell N: why`). Prints one `notebook PATH: ...` line per notebook and
`NOTEBOOK FAIL ...` for every real failure; exits 1 on any.
"""
import glob
import json
import sys

from IPython.core.interactiveshell import InteractiveShell

MISSING = ("graphviz", "pandas", "plotly", "jinja2", "ipywidgets", "anywidget")


def run(path: str, answers: bool = False) -> int:
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    ran = skipped = failed = 0
    nb = json.load(open(path))
    if answers:
        import os

        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        from notebook_answers import ANSWERS

        from graphlab.tour import fill_answers

        fill_answers(nb, ANSWERS.get(os.path.basename(path), {}))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        result = shell.run_cell("".join(cell["source"]), silent=False)
        err = result.error_in_exec or result.error_before_exec
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
            print(f"NOTEBOOK FAIL {path} cell {i}: {type(err).__name__}: {err}")
    print(f"notebook {path}: {ran} cells ran live, {skipped} skipped (a package missing here), "
          f"{failed} failed")
    return failed


if __name__ == "__main__":
    args = sys.argv[1:]
    with_answers = "--answers" in args
    paths = [a for a in args if a != "--answers"] or sorted(glob.glob("notebooks/*.ipynb"))
    sys.exit(1 if sum(run(p, with_answers) for p in paths) else 0)
