"""scripts/lab.sh opens JupyterLab without its news prompt and update check (issue 10), as the
real-browser test does (it starts JupyterLab with the same flags and overrides and checks no news
toast shows)."""
from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import REPO

LAB_SH = REPO / "scripts" / "lab.sh"


def _lab_settings():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("lab_settings", REPO / "scripts" / "lab_settings.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _jupyter_command() -> list[str]:
    text = LAB_SH.read_text().replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if ln.strip().startswith("exec .venv/bin/jupyter lab")]
    return shlex.split(line)


def test_lab_sh_starts_jupyterlab_with_news_and_update_checks_off() -> None:
    command = _jupyter_command()
    sys.path.insert(0, str(REPO / "tests" / "browser"))
    try:
        from test_inspector_browser import LAB_SH_FLAGS
    finally:
        sys.path.pop(0)
    assert set(LAB_SH_FLAGS) <= set(command)  # the flags the browser test runs JupyterLab with
    assert ".venv/bin/python scripts/lab_settings.py" in LAB_SH.read_text().split("exec .venv/bin/jupyter")[0]


def test_lab_settings_writes_the_news_off_overrides(tmp_path: Path) -> None:
    module = _lab_settings()
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "lab_settings.py"), "--dir", str(tmp_path)],
                          capture_output=True, text=True, check=True)
    path = tmp_path / "overrides.d" / "graphlab.json"
    assert str(path) in done.stdout
    settings = json.loads(path.read_text())
    assert settings == module.NEWS_OFF
    assert settings["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}
    (tmp_path / "overrides.json").write_text('{"x": 1}')  # a user's own overrides are left alone
    module.write_overrides(tmp_path)
    assert json.loads((tmp_path / "overrides.json").read_text()) == {"x": 1}
    assert module.default_settings_dir() == Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"


def test_the_notification_schema_still_has_those_settings() -> None:
    """If JupyterLab renames them, the overrides would silently do nothing."""
    schema = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas" / "@jupyterlab" / "apputils-extension" / "notification.json"
    properties = json.loads(schema.read_text())["properties"]
    assert {"fetchNews", "checkForUpdates"} <= set(properties)
    assert "false" in json.dumps(properties["fetchNews"])
