"""The documentation site: built from this checkout with warnings as errors, then checked in a real browser.

The module builds the site once (`scripts/docs_build.py`, what `bash scripts/docs.sh` runs: every
notebook executed, `mkdocs build --strict`) into a temporary folder, checks the built files, and
opens pages in Debian's headless Chromium through `drive_docs.mjs` (playwright-core), from file://
and from a static server on 127.0.0.1: a plotly figure draws, the inspector's static picture shows
in notebook 04, search answers, and no page asks any other host for anything.

Needs the `docs` extra (`bash scripts/docs.sh --install-only`; scripts/test.sh runs it); without it
the module skips, except under CI, where it fails. The browser test needs chromium, node and
`npm ci` in tests/browser, like test_inspector_browser.py. Timings are printed (run with -s).
"""
from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("GRAPHLAB_SCREENSHOT_DIR", REPO / "out" / "browser"))
DOCS_MODULES = ("mkdocs", "material", "mkdocs_jupyter", "mkdocstrings", "mkdocstrings_handlers.python")

sys.path.insert(0, str(REPO / "scripts"))


def _docs_missing() -> str | None:
    for name in DOCS_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return f"needs the docs extra ({name} is missing): bash scripts/docs.sh --install-only"
        except ModuleNotFoundError:
            return f"needs the docs extra ({name} is missing): bash scripts/docs.sh --install-only"
    return None


def _browser_missing() -> str | None:
    if not CHROMIUM.exists():
        return "needs Debian's chromium (apt-get install chromium)"
    if shutil.which("node") is None:
        return "needs node (apt-get install nodejs npm)"
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        return "needs playwright-core: run scripts/browser_test.sh (npm ci in tests/browser)"
    return None


def _notebooks() -> list[Path]:
    from docs_build import notebook_paths

    return notebook_paths()


def test_repository_paths_become_site_links() -> None:
    from docs_build import _linkify

    on_site = {"docs/capture.md", "notebooks/00_start_here.ipynb"}
    page = "See `docs/capture.md`, `00_start_here`, [the tests](../README.md#tests) and `bench/README.md`.\n"
    assert _linkify(page, "docs/overhead.md", on_site) == (
        "See [`docs/capture.md`](capture.md), [`00_start_here`](../notebooks/00_start_here.ipynb), "
        "[the tests](../index.md#tests) and `bench/README.md`.\n")
    fenced = "```\n`docs/capture.md`\n```\n[`docs/capture.md`](docs/capture.md)\n"
    assert _linkify(fenced, "index.md", on_site) == fenced  # code blocks and links stay as they are


def test_docstrings_read_as_written() -> None:
    pytest.importorskip("griffe")
    from docs_griffe import rewrite

    text = "Compare.\n\nArgs:\n    a, b: the graphs.\n        More.\n    names: labels.\n\nExample:\n    >>> x[:3]"
    assert rewrite(text) == (
        "Compare.\n\nArgs:\n    a: the graphs.\n        More.\n    b: the graphs.\n        More.\n"
        "    names: labels.\n\nExamples:\n    >>> x[:3]")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = _docs_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing + " (CI must build the docs: scripts/test.sh installs the extra)")
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("docs")
    out = root / "site"
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "docs_build.py"), "--site", str(out), "--work", str(root / "work")],
        capture_output=True, text=True, timeout=900, cwd=REPO, env={**os.environ, "TQDM_DISABLE": "1"},
    )
    seconds = time.perf_counter() - t0
    log = done.stdout + done.stderr
    print(f"\n[docs] site built in {seconds:.1f} s -> {out}")
    print("\n".join(line for line in done.stdout.splitlines() if line.startswith("[docs]")))
    assert done.returncode == 0, f"the docs build failed (strict):\n{log[-6000:]}"
    assert re.search(r"^WARNING", log, re.M) is None, log[-6000:]
    return out


def test_every_notebook_has_a_page_and_a_download(site: Path) -> None:
    notebooks = _notebooks()
    assert notebooks, "no notebooks found"
    nav = json.loads((site.parent / "work" / "src" / ".nav.json").read_text())
    tutorials = next(entry["Tutorials"] for entry in nav["nav"] if "Tutorials" in entry)
    assert [next(iter(t.values())) for t in tutorials] == [f"notebooks/{p.name}" for p in notebooks]
    for path in notebooks:
        page = (site / "notebooks" / path.with_suffix(".html").name).read_text(encoding="utf-8")
        assert "jp-Notebook" in page and "jp-OutputArea-output" in page, f"{path.name}: no outputs rendered"
        assert (site / "notebooks" / path.name).read_bytes() == path.read_bytes()  # the download: as committed


def test_api_reference_documents_every_public_name(site: Path) -> None:
    import graphlab

    pages = "".join(p.read_text(encoding="utf-8") for p in (site / "api").glob("*.html"))
    index = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in graphlab.__all__:
        if name.startswith("__"):
            continue
        assert f"gl.{name}</code>" in index, f"{name} missing from the API index"
        assert re.search(rf'id="graphlab\.[\w.]*\.{name}"', pages), f"{name} has no entry in the API reference"


def test_recordings_page_lists_every_recording(site: Path) -> None:
    import graphlab as gl

    page = (site / "recordings.html").read_text(encoding="utf-8")
    rows = gl.recordings_table()
    assert rows
    for row in rows:
        assert f"<strong>{row['name']}</strong>" in page and row["torch"] in page and row["date"] in page


_RESOURCE = re.compile(
    r"<(?:script|img|iframe|source|embed|audio|video|track|input)\b[^>]*?\ssrc=[\"']([^\"']+)"
    r"|<link\b[^>]*?\shref=[\"']([^\"']+)",
    re.I,
)


def test_built_pages_load_nothing_from_other_hosts(site: Path) -> None:
    """Every script, stylesheet, picture and frame a page names lives in the site, by a relative URL
    (so file:// works), except 404.html, which a host serves at any path and so names them from /."""
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10
    offenders = []
    for page in pages:
        html = page.read_text(encoding="utf-8")
        for match in _RESOURCE.finditer(html):
            url = next(g for g in match.groups() if g)
            if url.startswith("data:"):
                continue
            where = f"{page.relative_to(site)}: {url[:100]}"
            if re.match(r"^(?:[a-z][a-z0-9+.-]*:|//)", url, re.I):
                offenders.append(f"{where} (another host)")
            elif url.startswith("/"):
                if page.name != "404.html":
                    offenders.append(f"{where} (from the root: breaks file://)")
            elif not (page.parent / url.split("?")[0].split("#")[0]).exists():
                offenders.append(f"{where} (missing)")
    assert offenders == []
    assert (site / "assets" / "javascripts" / "plotly.min.js").stat().st_size > 1_000_000
    assert (site / "search" / "search_index.js").is_file()  # the offline plugin: search from file://


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def static_host(site: Path) -> Iterator[str]:
    """The site on a static server at 127.0.0.1 (a free port), as any static host would serve it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
def test_site_in_chromium_plotly_inspector_search_offline(site: Path, static_host: str) -> None:
    missing = _browser_missing()
    if missing:
        pytest.skip(missing)
    plotly_page = next(
        (f"notebooks/{p.name}" for p in (site / "notebooks").glob("*.html")
         if "plotly-graph-div" in p.read_text(encoding="utf-8")), None)
    assert plotly_page, "no notebook page has a plotly figure"
    inspector = next(p for p in _notebooks() if p.name.startswith("04_"))
    executed = json.loads((site.parent / "work" / "src" / "notebooks" / inspector.name).read_text())
    inspector_pictures = sum(  # outputs of a widget that also carry its static SVG
        1 for cell in executed["cells"] for out in cell.get("outputs", [])
        if {"application/vnd.jupyter.widget-view+json", "image/svg+xml"} <= set(out.get("data", {})))
    assert inspector_pictures >= 1, "notebook 04 shows no inspector"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    args = {
        "bases": [site.as_uri() + "/", static_host], "allowed_prefixes": [static_host],
        "plotly_page": plotly_page.replace(".ipynb", ".html"),
        "inspector_page": f"notebooks/{inspector.stem}.html", "search": "inspector",
        "screenshot_dir": str(SCREENSHOTS), "timeout_ms": 60_000,
    }
    t0 = time.perf_counter()
    done = subprocess.run(["node", str(HERE / "drive_docs.mjs"), json.dumps(args)],
                          capture_output=True, text=True, timeout=300, cwd=HERE)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"driver printed no report:\n{done.stdout}\n{done.stderr}"
    report = json.loads(lines[-1])
    print(f"\n[docs-browser] driver {time.perf_counter() - t0:.1f} s; "
          + "; ".join(f"{r['base']}: {r['times']}" for r in report.get("runs", [])))
    assert report["ok"], report.get("error")
    assert report["external_requests"] == [], "the site must work offline (no CDN, no font service)"
    assert report["page_errors"] == [], report["page_errors"]
    assert report["failed_requests"] == [], report["failed_requests"]
    assert [r["base"] for r in report["runs"]] == ["file", "http"]
    for run in report["runs"]:
        # every plotly figure drew its SVG, with plotly.js from the site itself
        assert run["plotly_divs"] >= 1 and run["plotly_drawn"] == run["plotly_divs"], run
        assert all(n > 0 for n in run["plotly_traces"]), run["plotly_traces"]
        assert run["plotly_js_src"] == ["../assets/javascripts/plotly.min.js"], run["plotly_js_src"]
        # the inspector shows its static picture: the drawn graph, decoded, with its nodes
        assert len(run["pictures"]) >= inspector_pictures, run["pictures"]
        assert all(p["width"] > 100 and p["nodes"] > 5 for p in run["pictures"]), run["pictures"]
        # search answers from the built index, file:// included, and highlights the word
        assert run["search_results"] > 0, run
        assert any(m.lower() == "inspector" for m in run["search_marks"]), run["search_marks"]
