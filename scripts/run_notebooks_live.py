"""Run notebooks' code cells live through IPython, on a GPU machine (the drawing stack carried as wheels).

    python3 scripts/run_notebooks_live.py [NOTEBOOK ...]     (default: every notebooks/*.ipynb)

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


def run(path: str) -> int:
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    ran = skipped = failed = 0
    for i, cell in enumerate(json.load(open(path))["cells"]):
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
    paths = sys.argv[1:] or sorted(glob.glob("notebooks/*.ipynb"))
    sys.exit(1 if sum(run(p) for p in paths) else 0)
