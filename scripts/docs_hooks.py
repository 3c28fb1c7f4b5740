"""MkDocs hooks for graphlab's documentation site (named in mkdocs.yml; scripts/docs_build.py stages the sources).

- the navigation comes from `.nav.json`, which docs_build.py writes into the staged sources (so new
  notebooks, docs pages and public names appear without editing mkdocs.yml);
- plotly.js is served by the site itself: the copy plotly's notebook renderer inlines into a page is
  replaced by one shared `assets/javascripts/plotly.min.js` (the same bytes, from the plotly package);
- the MathJax <script> from a CDN that plotly adds to every figure is dropped (no figure uses LaTeX);
- Material's offline plugin (search from file://) gets its iframe-worker shim from the site
  (scripts/docs_vendor/), not from unpkg;
- any page that would still load something from another host logs a warning, which fails the
  strict build;
- each notebook page links the notebook as committed (no outputs), copied next to the page.
"""
from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

log = logging.getLogger("mkdocs.hooks.graphlab_docs")

PLOTLY_ASSET = "assets/javascripts/plotly.min.js"
SHIM_ASSET = "assets/javascripts/iframe-worker-shim.js"  # mkdocs.yml's extra.polyfills names it
SHIM_SOURCE = Path(__file__).resolve().parent / "docs_vendor" / "iframe-worker-shim.js"
# plotly's HTML renderers add this to every figure, whatever include_mathjax says (plotly 6/7)
_CDN_MATHJAX = re.compile(r"<script[^>]*\ssrc=\"(?:https?:)?//[^\"]*mathjax[^\"]*\"[^>]*>\s*</script>", re.I)
_EMPTY_SCRIPT = re.compile(r"<script src=\"\">\s*</script>")  # nbconvert's MathJax tag with no URL set
# what a browser fetches by itself: src of media/scripts/frames, href of <link>, CSS url() and @import
_RESOURCE = re.compile(
    r"<(?:script|img|iframe|source|embed|audio|video|track|input)\b[^>]*?\ssrc=[\"']([^\"']+)"
    r"|<link\b[^>]*?\shref=[\"']([^\"']+)"
    r"|url\(\s*[\"']?((?:https?:)?//[^\"')]+)"
    r"|@import\s+[\"']((?:https?:)?//[^\"']+)",
    re.I,
)
_EXTERNAL = re.compile(r"^(?:https?:)?//", re.I)

_state: dict[str, Any] = {"notebooks": [], "build": {}}


def _plotly_bundle() -> str:
    if "plotly" not in _state:
        from plotly.offline import get_plotlyjs

        _state["plotly"] = get_plotlyjs()
    return str(_state["plotly"])


def on_config(config: Any) -> Any:
    docs_dir = Path(config["docs_dir"])
    meta = docs_dir / ".nav.json"
    if config["nav"] is None and meta.is_file():
        data = json.loads(meta.read_text(encoding="utf-8"))
        config["nav"] = data["nav"]
        _state["build"] = data.get("build", {})
    return config


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, PLOTLY_ASSET, content=_plotly_bundle()))
    files.append(File.generated(config, SHIM_ASSET, abs_src_path=str(SHIM_SOURCE)))
    _state["notebooks"] = [f.src_uri for f in files if f.src_uri.endswith(".ipynb")]
    return files


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    src = page.file.src_uri
    if not src.endswith(".ipynb"):
        return html
    build = _state["build"]
    mode = build.get("mode", "recorded")
    when = f" on {build['date']}" if build.get("date") else ""
    commit = f" at commit <code>{build['commit']}</code>" if build.get("commit") else ""
    if build.get("dirty"):
        commit += " with local changes"
    name = Path(src).name
    widgets = ""
    if "application/vnd.jupyter.widget-view+json" in Path(page.file.abs_src_path).read_text(encoding="utf-8"):
        widgets = (" Widgets (the inspector, the latency lab) show their static picture here; "
                   "they are interactive in JupyterLab.")
    note = (
        f'<div class="admonition info gl-notebook-note"><p>Executed in <b>{mode}</b> mode when this site was '
        f'built{when}{commit}.{widgets} <a href="{name}" download>Download the notebook</a> (as committed, '
        "without outputs) to run it yourself.</p></div>\n"
    )
    return note + html


def on_post_page(output: str, page: Any, config: Any) -> str:
    bundle = _plotly_bundle()
    at = output.find(bundle)
    while at >= 0:  # the inlined plotly.js (once per notebook) -> the site's copy
        start = output.rfind("<script", 0, at)
        end = output.find("</script>", at + len(bundle))
        if start < 0 or end < 0 or not re.fullmatch(r"<script[^>]*>\s*", output[start:at]):
            log.warning("%s: plotly.js is inlined in an unexpected way; left as it is", page.file.src_uri)
            break
        src = get_relative_url(PLOTLY_ASSET, page.url)
        output = output[:start] + f'<script src="{src}"></script>' + output[end + len("</script>"):]
        at = output.find(bundle)
    output = _CDN_MATHJAX.sub("", output)
    output = _EMPTY_SCRIPT.sub("", output)
    if "plotly-graph-div" in output and PLOTLY_ASSET.rsplit("/", 1)[1] not in output:
        log.warning("%s: has a plotly figure but does not load plotly.js", page.file.src_uri)
    for match in _RESOURCE.finditer(output):
        url = next(g for g in match.groups() if g)
        if _EXTERNAL.match(url):
            log.warning("%s: loads %s from another host (the site must work offline)", page.file.src_uri, url[:120])
    if re.search(r'class="[^"]*\bjp-Mermaid\b', output):
        log.warning("%s: a mermaid diagram would load mermaid.js from a CDN", page.file.src_uri)
    return output


def on_post_build(config: Any) -> None:
    repo = Path(config["config_file_path"]).resolve().parent
    site = Path(config["site_dir"])
    for src in _state["notebooks"]:
        original = repo / src  # notebooks/NAME.ipynb, as committed
        if original.is_file():
            (site / src).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(original, site / src)
        else:
            log.warning("%s: no committed notebook to offer for download", src)
