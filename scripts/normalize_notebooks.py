"""Write the tutorial notebooks as JupyterLab saves them, without outputs, so opening one leaves the clone clean.

Opening a notebook in JupyterLab marks it changed at once (the kernel's `language_info` and
`kernelspec` replace what the file holds) and autosave then writes it: a clone got dirty by merely
opening `00_start_here`. Committed with that metadata, the notebooks give JupyterLab nothing to change.

What JupyterLab writes was measured on the project's CPU machine (2026-12-01: JupyterLab 4.6.6,
ipykernel 7.4.0, nbformat 5.11.1, Python 3.11.7 in .venv): a notebook opened, its kernel started, then
saved, differed from the committed file in its notebook metadata only, which became exactly
`JUPYTERLAB_METADATA` (formatting, cell ids and cell metadata were already the same: nbformat's
writer, indent 1, sorted keys). `language_info.version` is the kernel's Python: under another Python,
JupyterLab writes that version instead, and nothing can prevent it.

This script sets that metadata, clears every output and execution count, and writes with nbformat's
own writer (the one JupyterLab's server uses). tests/test_notebook_format.py fails when a committed
notebook is not normalised, so CI catches drift.

    .venv/bin/python scripts/normalize_notebooks.py              # rewrite notebooks/*.ipynb in place
    .venv/bin/python scripts/normalize_notebooks.py --check      # list those that differ; exit 1 if any
    .venv/bin/python scripts/normalize_notebooks.py path.ipynb   # just these
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

import nbformat

REPO = Path(__file__).resolve().parent.parent

#: the notebook metadata JupyterLab 4 writes on save, with the project's kernel (see the module docstring)
JUPYTERLAB_METADATA: dict[str, Any] = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
        "version": "3.11.7",
    },
}


def normalized(nb: Any) -> Any:
    """A copy of `nb` (a NotebookNode) with no outputs or execution counts and exactly `JUPYTERLAB_METADATA`."""
    out = copy.deepcopy(nb)
    out.metadata = nbformat.from_dict(copy.deepcopy(JUPYTERLAB_METADATA))
    for cell in out.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return out


def normalized_text(path: Path) -> str:
    """The text `path` should hold: its notebook normalised, written as nbformat (and JupyterLab) writes it."""
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    return nbformat.writes(normalized(nb)) + "\n"


def notebooks() -> list[Path]:
    """The tutorial notebooks: notebooks/*.ipynb."""
    return sorted((REPO / "notebooks").glob("*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/*.ipynb)")
    parser.add_argument("--check", action="store_true", help="change nothing; list notebooks that differ, exit 1 if any")
    args = parser.parse_args(argv)
    differ = []
    for path in args.paths or notebooks():
        want = normalized_text(path)
        if path.read_text(encoding="utf-8") == want:
            continue
        differ.append(path)
        if not args.check:
            path.write_text(want, encoding="utf-8")
    verb = "not normalised" if args.check else "normalised"
    for path in differ:
        print(f"{verb}: {path}")
    if args.check and differ:
        print("run: .venv/bin/python scripts/normalize_notebooks.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
