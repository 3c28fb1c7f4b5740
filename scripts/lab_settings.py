"""JupyterLab's news and update checks off for this install (scripts/lab.sh runs it before `jupyter lab`).

Writes `<settings dir>/overrides.d/graphlab.json`: defaults JupyterLab applies for every user of this
environment (a user's own settings still win; `overrides.d` holds one file per package, so nothing
else is touched). Without it JupyterLab 4 asks "Would you like to get notified about official
Jupyter news?" in a toast, and would fetch news from the network. The real-browser test starts
JupyterLab with the same file (tests/browser/test_inspector_browser.py).

    .venv/bin/python scripts/lab_settings.py              # <sys.prefix>/share/jupyter/lab/settings
    .venv/bin/python scripts/lab_settings.py --dir DIR    # another settings folder (LabApp.app_settings_dir)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

NEWS_OFF: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}


def default_settings_dir() -> Path:
    """Where JupyterLab of this Python environment reads its overrides (LabApp.app_settings_dir)."""
    return Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"


def write_overrides(settings_dir: Path) -> Path:
    """Write `NEWS_OFF` to `settings_dir/overrides.d/graphlab.json`; return its path."""
    path = settings_dir / "overrides.d" / "graphlab.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(NEWS_OFF, indent=2) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="settings folder (default: this environment's)")
    args = parser.parse_args(argv)
    path = write_overrides(args.dir or default_settings_dir())
    print(f"JupyterLab news and update checks off: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
