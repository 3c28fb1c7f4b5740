"""Build graphlab's documentation site (MkDocs + Material): `bash scripts/docs.sh` runs this.

    .venv/bin/python scripts/docs_build.py [--site DIR] [--work DIR] [--jobs N]

1. Stages the sources in WORK/src (default build/docs/src), laid out as in the repository so that the
   links between README, docs/ and notebooks/ work unchanged: `index.md` (the README, its repository
   paths turned into links), `docs/` (every page and picture), `recordings.md` (made from
   `graphlab.recordings_table()`), `api/` (one `:::` entry per name of `graphlab.__all__`, grouped by
   subpackage, read by mkdocstrings), and `.nav.json` (the navigation, read by scripts/docs_hooks.py).
2. Executes every notebook of notebooks/ (the ones `graphlab tour` runs) with the tour's own runner,
   in parallel (live on a GPU machine, recorded mode without one), into WORK/src/notebooks/.
3. Runs `mkdocs build --strict` into SITE (default site/): any warning fails the build (a broken
   link or anchor, a missing reference, a page that would load something from another host).

A notebook that fails stops the build before MkDocs runs, with the failing cell's last line.
Exit status: 0 built, 1 failed.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's graphlab, installed or not

# Guides in reading order; pages not listed here follow, alphabetically (none is ever left out).
GUIDE_ORDER = [
    "reading-a-drawing", "capture", "inspector", "latency-method", "overhead", "architecture",
    "gpu-validation", "docs-site",
]
# API pages: one per feature package of graphlab; top-level modules go to "environment", errors last.
API_GROUPS = {
    "graph": "The graph: model, DOT, kernel names, structure, diff",
    "capture": "Capture: the engine, captured graphs, diagnosis",
    "timing": "Timing: sweeps, blocks, timelines, results",
    "cache": "The graph cache: buckets, padding, advisor",
    "conditional": "Conditional nodes",
    "watch": "Watching other libraries' graphs",
    "distributed": "Several GPUs",
    "viz": "Drawings and plots",
    "ui": "Notebook UI: inspector, latency lab",
    "serve": "Serving",
    "studies": "Studies: the experiments behind the recordings",
    "environment": "Environment, mode, recordings, the zoo",
    "errors": "Errors",
}


def log(msg: str) -> None:
    print(f"[docs] {msg}", flush=True)


# -- staging --------------------------------------------------------------------------------------
def _linkify(text: str, page: str, on_site: set[str]) -> str:
    """Turn `docs/X.md`, `notebooks/X.ipynb` and a bare notebook name (`00_start_here`) written as
    inline code into links, relative to `page` (its path on the site, e.g. "docs/capture.md"), when
    the target is on the site; point links to the README at index.md. Fenced code blocks and code
    that already is a link's text are left alone."""

    def target(code: str) -> str | None:
        if re.fullmatch(r"\d\d_[A-Za-z0-9_]+", code):
            code = f"notebooks/{code}.ipynb"
        if code in on_site:
            return os.path.relpath(code, os.path.dirname(page) or ".").replace(os.sep, "/")
        return None

    def readme(match: re.Match[str]) -> str:  # the README is the site's index.md
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), match.group(1)))
        if resolved != "README.md":
            return match.group(0)
        return f"]({os.path.relpath('index.md', os.path.dirname(page) or '.')}{match.group(2) or ''})"

    out, fenced = [], False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced:
            line = re.sub(
                r"(?<!\[)`([^`\s]+)`(?!\]\()",
                lambda m: f"[`{m.group(1)}`]({t})" if (t := target(m.group(1))) else m.group(0),
                line,
            )
            line = re.sub(r"\]\(([^)\s#]*README\.md)(#[^)\s]*)?\)", readme, line)
        out.append(line)
    return "".join(out)


def stage_pages(src: Path, notebooks: list[Path]) -> None:
    shutil.copytree(REPO / "docs", src / "docs")
    pages = sorted(p.relative_to(src).as_posix() for p in (src / "docs").rglob("*.md"))
    on_site = {*pages, *(f"notebooks/{p.name}" for p in notebooks)}
    for page in pages:
        path = src / page
        path.write_text(_linkify(path.read_text(encoding="utf-8"), page, on_site), encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (src / "index.md").write_text(_linkify(readme, "index.md", on_site), encoding="utf-8")


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def stage_recordings(src: Path) -> None:
    import graphlab as gl

    about = (REPO / "data" / "recordings" / "README.md").read_text(encoding="utf-8")
    about = re.sub(r"\A# .*\n", "", about).strip()
    rows = gl.recordings_table()
    lines = [
        "# Recordings",
        "",
        "Without a GPU the notebooks run in **recorded mode**: they load these runs, made by "
        "`graphlab record` on a GPU and committed under `data/recordings/`. This table is made from "
        "`graphlab.recordings_table()` when the site is built.",
        "",
        "| recording | what it is | GPU | torch | recorded | graphs; results |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        gpu = f"{r['gpu']} (driver {r['driver']})" if r.get("driver") else r["gpu"]
        cells = [f"**{r['name']}**", r["description"], gpu, r["torch"], r["date"], f"{r['graphs']}; {r['results']}"]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if not rows:
        lines.append("| *(none found)* | | | | | |")
    lines += [
        "",
        "```python",
        "import graphlab as gl",
        'rec = gl.load_recording("gpt")      # the GPT recording above',
        'rec.graph("b1"), rec.results("sweep"), rec.banner()',
        "```",
        "",
        "## How they are made",
        "",
        about,
        "",
    ]
    (src / "recordings.md").write_text("\n".join(lines), encoding="utf-8")


def _api_group(module: str) -> str:
    part = module.split(".")[1] if module.count(".") >= 1 else "environment"
    if part == "errors":
        return "errors"
    return part if (REPO / "graphlab" / part).is_dir() else "environment"


def _module_of(name: str, graphlab: Any, package: Any) -> str:
    """The module that defines public name `name`: from `_LAZY` (lazy names), from the import in
    graphlab/__init__.py (read statically), else by importing it; raises when `graphlab.name` fails."""
    lazy = getattr(graphlab, "_LAZY", {})
    if name in lazy:
        return str(lazy[name])
    member = package.members.get(name)
    if member is not None:
        return str(member.target_path if member.is_alias else member.path).rsplit(".", 1)[0]
    return str(getattr(graphlab, name).__module__)


def stage_api(src: Path) -> tuple[list[dict[str, str]], list[str]]:
    """api/index.md and one page per group; returns the nav entries of the group pages, and the
    public names that could not be documented (each one line)."""
    import griffe

    import graphlab

    package = griffe.load("graphlab", search_paths=[str(REPO)], resolve_aliases=False)
    entries = []  # (group, module, lineno, name, kind, summary)
    problems = []
    for name in graphlab.__all__:
        if name.startswith("__"):
            continue  # __version__
        try:
            module = _module_of(name, graphlab, package)
        except Exception as exc:
            problems.append(f"graphlab.__all__ lists {name!r}, but graphlab.{name} fails: {type(exc).__name__}: {exc}")
            continue
        try:
            obj = package[f"{module}.{name}".removeprefix("graphlab.")]
            kind, lineno = obj.kind.value, obj.lineno or 0
            summary = obj.docstring.value.strip().splitlines()[0] if obj.docstring else ""
        except (KeyError, AttributeError):  # mkdocstrings could not document it either
            problems.append(f"graphlab.__all__ lists {name!r} from {module}, but the source has no {module}.{name}")
            continue
        entries.append((_api_group(module), module, lineno, name, kind, summary))
    order = list(API_GROUPS)
    groups = sorted({e[0] for e in entries}, key=lambda g: (order.index(g) if g in order else len(order), g))
    (src / "api").mkdir()
    index = [
        "# API reference",
        "",
        f"Every public name of `graphlab` (`graphlab.__all__`, version {graphlab.__version__}), generated "
        "from the docstrings when the site is built. Use them as `gl.NAME` after `import graphlab as gl`; "
        "`import graphlab` stays light because each name loads its module on first use.",
        "",
    ]
    nav = []
    for group in groups:
        title = API_GROUPS.get(group, f"graphlab.{group}")
        members = sorted((e for e in entries if e[0] == group), key=lambda e: (e[1], e[2], e[3]))
        page = [f"# {title}", ""]
        about = package.members.get(group)  # the subpackage's own docstring says what it holds
        if about is not None and not about.is_alias and about.docstring:
            page += [about.docstring.value.strip().split("\n\n")[0], ""]
        index += [f"## [{title}]({group}.md)", "", "| name | kind | what it is |", "|---|---|---|"]
        module = None
        for _, mod, _, name, kind, summary in members:
            if mod != module:
                module = mod
                page += [f"## `{mod}`", ""]
            page += [f"::: {mod}.{name}", ""]
            index.append(f"| [`gl.{name}`]({group}.md#{mod}.{name}) | {kind} | {_cell(summary)} |")
        index.append("")
        (src / "api" / f"{group}.md").write_text("\n".join(page), encoding="utf-8")
        nav.append({title: f"api/{group}.md"})
    (src / "api" / "index.md").write_text("\n".join(index), encoding="utf-8")
    return nav, problems


# -- notebooks ------------------------------------------------------------------------------------
def notebook_paths() -> list[Path]:
    """Every notebook of this checkout's notebooks/, in reading order, by `graphlab tour`'s rule (a
    name starting with "_" is not a tutorial). Read from the folder, not from graphlab.tour, which
    prefers the copy installed with the package."""
    return sorted(p for p in (REPO / "notebooks").glob("*.ipynb") if not p.name.startswith("_"))


def _execute(path: str, out_dir: str, timeout_s: int) -> tuple[str, float, str | None]:
    """Worker: run one notebook with `graphlab tour`'s runner; (name, seconds, error or None)."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    from graphlab.tour import execute_notebook

    t0 = time.perf_counter()
    try:
        execute_notebook(Path(path), Path(out_dir), timeout_s)
    except Exception as exc:  # a failed cell (GraphlabError), a timeout, a dead kernel
        message = re.sub(r"\x1b\[[0-9;]*m", "", f"{type(exc).__name__}: {exc}")  # no terminal colours
        return Path(path).name, time.perf_counter() - t0, message
    return Path(path).name, time.perf_counter() - t0, None


def start_notebooks(paths: list[Path], work: Path, jobs: int, timeout_s: int) -> tuple[Any, list[Any]]:
    """Start executing the notebooks in worker processes (fresh interpreters: spawn); return the pool
    and the futures. Longest first: notebook 03 takes about twice as long as the others."""
    executed = work / "executed"
    shutil.rmtree(executed, ignore_errors=True)
    executed.mkdir(parents=True)
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=max(1, min(jobs, len(paths))), mp_context=multiprocessing.get_context("spawn"))
    futures = [pool.submit(_execute, str(p), str(executed), timeout_s)
               for p in sorted(paths, key=lambda p: -p.stat().st_size)]
    return pool, futures


def collect_notebooks(pool: Any, futures: list[Any], src: Path, work: Path) -> list[str]:
    """Wait for the notebooks; copy each executed one into src/notebooks; return the failures."""
    (src / "notebooks").mkdir(exist_ok=True)
    failures = []
    with pool:
        for future in concurrent.futures.as_completed(futures):
            name, seconds, error = future.result()
            if error:
                failures.append(f"{name}: {error}")
                log(f"FAIL {name} ({seconds:.1f} s): {error}")
            else:
                shutil.copyfile(work / "executed" / name, src / "notebooks" / name)
                log(f"ok   {name} ({seconds:.1f} s)")
    return failures


def _notebook_title(path: Path) -> str:
    """Nav title: "NN · first heading", without the number the heading may already start with."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    title = path.stem
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            match = re.search(r"^#\s+(.+)$", "".join(cell.get("source", [])), re.M)
            if match:
                title = match.group(1).strip()
                break
    number = re.match(r"(\d+)_", path.name)
    if number:
        title = re.sub(rf"^0*{int(number.group(1))}\s*[·.:-]\s*", "", title)
        title = f"{number.group(1)} · {title}"
    return title


def build_info() -> dict[str, str]:
    info = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")}
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "graphlab", "notebooks", "data"],
                               cwd=REPO, capture_output=True, text=True).stdout.strip()
        info["commit"] = commit
        if dirty:
            info["dirty"] = "yes"
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def write_nav(src: Path, notebooks: list[Path], api_nav: list[dict[str, str]], info: dict[str, str]) -> None:
    pages = sorted(p.relative_to(src / "docs").with_suffix("").as_posix() for p in (src / "docs").rglob("*.md"))
    guides = [p for p in GUIDE_ORDER if p in pages] + [p for p in pages if p not in GUIDE_ORDER]
    nav = [
        {"Home": "index.md"},
        {"Tutorials": [{_notebook_title(p): f"notebooks/{p.name}"} for p in notebooks]},
        {"Guides": [f"docs/{p}.md" for p in guides]},
        {"Recordings": "recordings.md"},
        {"API reference": [{"All public names": "api/index.md"}, *api_nav]},
    ]
    (src / ".nav.json").write_text(json.dumps({"nav": nav, "build": info}, indent=1), encoding="utf-8")


# -- main -----------------------------------------------------------------------------------------
def docs_deps_satisfied() -> bool:
    """True when every requirement of pyproject's `docs` extra is installed (so docs.sh skips pip)."""
    try:
        import importlib.metadata as md
        import tomllib

        from packaging.requirements import Requirement

        extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["docs"]
        for line in extra:
            req = Requirement(line)
            if md.version(req.name) not in req.specifier:
                return False
        return True
    except Exception:  # Python 3.10 (no tomllib), no packaging, a package missing: let pip decide
        return False


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:] == ["--deps-satisfied"]:
        return 0 if docs_deps_satisfied() else 1
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default=str(REPO / "site"), help="output folder (default site/)")
    parser.add_argument("--work", default=str(REPO / "build" / "docs"), help="staging folder (default build/docs/)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="notebooks run at once (default: cores)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a notebook cell may take (default 600)")
    args = parser.parse_args(argv)
    work, site = Path(args.work).resolve(), Path(args.site).resolve()
    src = work / "src"
    t_start = time.perf_counter()
    # the notebooks' kernels import this checkout's graphlab too, whatever else is installed
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    notebooks = notebook_paths()
    log(f"{len(notebooks)} notebooks: {', '.join(p.name for p in notebooks)}")
    pool, futures = start_notebooks(notebooks, work, args.jobs, args.timeout)
    # while the notebooks run in their worker processes, this one stages the pages
    t0 = time.perf_counter()
    try:
        stage_pages(src, notebooks)
        stage_recordings(src)
        api_nav, problems = stage_api(src)
        info = build_info()
        import graphlab as gl

        info["mode"] = "live" if gl.has_cuda() else "recorded"
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    log(f"pages staged in {time.perf_counter() - t0:.1f} s ({info['mode']} mode)")
    failures = collect_notebooks(pool, futures, src, work) + problems
    t_notebooks = time.perf_counter() - t_start
    log(f"notebooks executed in {t_notebooks:.1f} s ({min(args.jobs, len(notebooks))} at a time)")
    if failures:
        log(f"{len(failures)} problem(s); no site built:")
        for line in failures:
            log(f"  {line}")
        return 1
    write_nav(src, notebooks, api_nav, info)

    t0 = time.perf_counter()
    env = {**os.environ, "GRAPHLAB_DOCS_SRC": str(src), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)],
        cwd=REPO, env=env,
    )
    log(f"mkdocs build in {time.perf_counter() - t0:.1f} s; total {time.perf_counter() - t_start:.1f} s")
    if done.returncode != 0:
        log("mkdocs build failed (warnings count as errors: see above)")
        return 1
    log(f"site: {site / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
