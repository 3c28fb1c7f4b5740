"""Recordings: real GPU runs saved as text, so every notebook and widget also works without a GPU.

Pure (no torch): standard library only. JSON and plain text only; never pickle.

Layout, one folder per recording (written by `graphlab record` on a GPU machine):

    data/recordings/<gpu>/<name>/
        meta.json        provenance + index of the files below (see REQUIRED_META)
        <graph>.dot      the DOT exactly as cudaGraphDebugDotPrint wrote it; `Recording.graph` parses it
                         on load (recordings made before 2026-12 also hold <graph>.json, the parsed
                         model at record time: `Recording.stored_model` still reads it)
        <results>.json   measurements (latency sweeps, timelines, ...), named in meta["results"]

meta.json:
    {"schema": 1, "name": "mlp", "description": "...",
     "provenance": {"gpu": "NVIDIA H200", "driver": "580.x", "torch": "2.11.0+cu130", "cuda": "13.0",
                    "cuda_bindings": "13.x", "graphlab_version": "0.1.0", "git_commit": "abc123",
                    "command": "graphlab record ...", "date": "2026-11-29T15:00:00Z"},
     "graphs": {"b1": {"dot": "b1.dot", "batch_size": 1, "dot_flags": 1}, ...},
     "results": {"sweep": "sweep.json", ...}}
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from graphlab import present
from graphlab.graph.model import CudaGraph
from graphlab.errors import DotParseError, GraphlabError, RecordingError
from graphlab.files import kind_of, open_regular

if TYPE_CHECKING:
    from graphlab.graph.dot_limits import DotLimits

SCHEMA_VERSION = 1
REQUIRED_META = ("schema", "name", "provenance", "graphs", "results")
REQUIRED_PROVENANCE = ("gpu", "driver", "torch", "cuda", "graphlab_version", "git_commit", "command", "date")
_SAFE_FILE = re.compile(r"^[A-Za-z0-9_.-]+$")
#: a recording's name and its GPU folder: letters, digits, `_`, `-` and `.`, not first (no separators, no `..`,
#: no glob characters, no hidden names), at most 100 characters
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$")
#: the largest JSON file a recording may hold (the largest real one, h200/resnet18/census.json, is 0.28 MB)
MAX_JSON_BYTES = 32 * 2**20
#: the most JSON values (objects, arrays and the items in them) a recording's JSON may hold, counted from its
#: bytes before it is parsed: Python holds each parsed value in 30 to 80 bytes, so 32 MiB of `[],[],...` would
#: take over 500 MB; the real ones hold at most 20,000 (h200/profile/events_resnet50_b64.json)
MAX_JSON_VALUES = 1_000_000

ENV_RECORDINGS_DIR = "GRAPHLAB_RECORDINGS"
#: Fields of a graph's meta.json entry that say where it came from; `Recording.graph` carries them into
#: `CudaGraph.metadata` (the inspector shows them).
GRAPH_ORIGIN_FIELDS = ("rank", "world_size", "device")


def recordings_root() -> Path:
    """Where recordings live: $GRAPHLAB_RECORDINGS, else the copy installed with the package,
    else `data/recordings` of a source checkout."""
    env = os.environ.get(ENV_RECORDINGS_DIR)
    if env:
        return Path(env)
    package_dir = Path(__file__).resolve().parent
    installed = package_dir / "_data" / "recordings"
    if installed.is_dir():
        return installed
    return package_dir.parent / "data" / "recordings"


def gpu_slug(gpu_name: str) -> str:
    """Folder name for a GPU: "NVIDIA H200" -> "h200"."""
    name = gpu_name.lower().replace("nvidia", "").strip()
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"


def check_name(name: Any, what: str = "recording name") -> str:
    """`name` if it is a safe recording or GPU folder name (see `_SAFE_NAME`), else RecordingError."""
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or ".." in name:
        raise RecordingError(f"{what} {name!r} is not a plain name: use letters, digits, '_', '-' and '.' "
                             "(no '/', '..', '*', '?' or other glob characters), e.g. 'gpt' or 'h200'")
    return name


def inside(path: Path, root: Path, what: str) -> Path:
    """`path` resolved (symlinks followed); RecordingError unless it stays inside `root` (also resolved)."""
    try:
        resolved, base = path.resolve(), root.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise RecordingError(f"{path}: cannot resolve the {what} ({exc})") from None
    if resolved != base and base not in resolved.parents:
        link = " (a symlink)" if path.is_symlink() else ""
        raise RecordingError(f"{path}: the {what}{link} leads to {resolved}, outside {base}: refused (a recording "
                             "reads only files inside its folder)")
    return resolved


def _read_json(path: Path, root: Path | None = None) -> Any:
    """A JSON file of a recording: inside `root` (default: its own folder), at most MAX_JSON_BYTES, not
    nested deeper than Python's JSON reader can go; every failure a RecordingError naming the file."""
    inside(path, root if root is not None else path.parent, "file")
    try:
        with open_regular(path) as file:  # never waits on a FIFO
            size = os.fstat(file.fileno()).st_size
            if size > MAX_JSON_BYTES:
                raise RecordingError(f"{path}: {size:,} bytes, more than a recording's JSON may hold "
                                     f"({MAX_JSON_BYTES:,}, graphlab.recordings.MAX_JSON_BYTES)")
            data = file.read(MAX_JSON_BYTES + 1)
        if len(data) > MAX_JSON_BYTES:
            raise RecordingError(f"{path}: more than {MAX_JSON_BYTES:,} bytes, more than a recording's JSON may hold")
        values = data.count(b",") + data.count(b"[") + data.count(b"{")  # an upper bound, in one pass each
        if values > MAX_JSON_VALUES:
            raise RecordingError(f"{path}: about {values:,} JSON values, more than a recording's JSON may hold "
                                 f"({MAX_JSON_VALUES:,}, graphlab.recordings.MAX_JSON_VALUES); refused before parsing")
        text = data.decode("utf-8")
        del data  # the bytes and the parsed objects are never held together
    except FileNotFoundError:
        raise RecordingError(f"{path}: file missing from the recording") from None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise RecordingError(f"{path}: cannot read ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordingError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise RecordingError(f"{path}: JSON nested too deep to be a recording") from None


def _check_file_name(folder: Path, name: Any, what: str, root: Path | None = None) -> Path:
    if not isinstance(name, str) or not _SAFE_FILE.fullmatch(name) or name in (".", ".."):
        raise RecordingError(f"{folder / 'meta.json'}: {what} must be a plain file name, got {name!r}")
    path = folder / name
    inside(path, root if root is not None else folder, f"file {what}")
    return path


def validate_meta(meta: Any, folder: Path, root: Path | None = None) -> dict[str, Any]:
    """Check the structure of meta.json; raise RecordingError naming the first problem. Every file it names
    must be a plain name in `folder` that stays inside `root` (default: `folder`) once symlinks are followed."""
    where = folder / "meta.json"
    if not isinstance(meta, dict):
        raise RecordingError(f"{where}: expected a JSON object")
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise RecordingError(f"{where}: missing key(s) {', '.join(missing)}")
    if meta["schema"] != SCHEMA_VERSION:
        raise RecordingError(f"{where}: schema {meta['schema']!r} is not supported (expected {SCHEMA_VERSION})")
    prov = meta["provenance"]
    if not isinstance(prov, dict):
        raise RecordingError(f"{where}: 'provenance' must be an object")
    missing = [k for k in REQUIRED_PROVENANCE if k not in prov]
    if missing:
        raise RecordingError(f"{where}: provenance lacks {', '.join(missing)}")
    if not isinstance(meta["graphs"], dict) or not isinstance(meta["results"], dict):
        raise RecordingError(f"{where}: 'graphs' and 'results' must be objects")
    for key, entry in meta["graphs"].items():
        if not isinstance(entry, dict) or "dot" not in entry:
            raise RecordingError(f"{where}: graph {key!r} needs a 'dot' file name")
        for part in ("dot", "model"):  # "model": the parsed JSON that older recordings also hold
            if part not in entry:
                continue
            _check_regular(_check_file_name(folder, entry[part], f"graphs.{key}.{part}", root))
    for key, name in meta["results"].items():
        _check_regular(_check_file_name(folder, name, f"results.{key}", root))
    return meta


def _check_regular(path: Path) -> None:
    """RecordingError unless `path` is a regular file (a FIFO would make a reader wait forever)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        raise RecordingError(f"{path}: file missing from the recording") from None
    if not stat.S_ISREG(mode):
        raise RecordingError(f"{path}: it is {kind_of(mode)}, not a regular file: refused")



@contextlib.contextmanager
def _reading_dot(path: Path) -> Iterator[None]:
    """A recording's DOT file that cannot be read or parsed is a broken recording: `RecordingError`, naming the file
    (and for a parse, its line and any limit passed, how to raise it; the `DotParseError` its `__cause__`)."""
    try:
        yield
    except DotParseError as exc:
        raise RecordingError(str(exc)) from exc
    except OSError as exc:  # DotFileError: also the OSError, its errno set
        if exc.errno == errno.ENOENT:
            raise RecordingError(f"{path}: file missing from the recording") from None
        raise RecordingError(f"{path}: cannot read ({exc.strerror or exc})") from None

@dataclass(frozen=True)
class Recording:
    """One recording folder, validated on load. Files are read lazily."""

    path: Path
    meta: dict[str, Any]
    #: the folder no file of it may leave (symlinks followed): the recordings root it was found under, or its
    #: own folder when opened directly
    root: Path | None = dataclasses.field(default=None, compare=False, repr=False)

    @classmethod
    def open(cls, path: str | Path, *, root: str | Path | None = None) -> Recording:
        """The recording in folder `path`, validated; with `root`, the folder and every file must stay inside it."""
        folder = Path(path)
        bound = Path(root) if root is not None else folder
        if root is not None:
            inside(folder, bound, "recording folder")
        if not folder.is_dir():
            raise RecordingError(f"{folder}: no such recording folder")
        return cls(folder, validate_meta(_read_json(folder / "meta.json", bound), folder, bound), bound)

    def _file(self, name: str) -> Path:
        """A file of this recording, checked again as it is read (a file may be swapped after the open)."""
        path = self.path / name
        inside(path, self.root if self.root is not None else self.path, "file")
        return path

    @property
    def name(self) -> str:
        return str(self.meta["name"])

    @property
    def description(self) -> str:
        return str(self.meta.get("description", ""))

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.meta["provenance"])

    @property
    def gpu(self) -> str:
        return str(self.meta["provenance"]["gpu"])

    @property
    def graph_names(self) -> list[str]:
        """Graph keys in recording order, e.g. ["b1", "b8"]."""
        return list(self.meta["graphs"])

    @property
    def result_names(self) -> list[str]:
        return list(self.meta["results"])

    def graph_info(self, key: str | None = None) -> dict[str, Any]:
        """meta.json's entry for one graph (batch size, flags, file names)."""
        return dict(self.meta["graphs"][self._graph_key(key)])

    def _graph_key(self, key: str | None) -> str:
        if key is None:
            if not self.graph_names:
                raise RecordingError(f"{self.path}: recording holds no graphs")
            return self.graph_names[0]
        if key not in self.meta["graphs"]:
            raise RecordingError(f"{self.path}: no graph {key!r}; it has {', '.join(self.graph_names) or 'none'}")
        return key

    def dot(self, key: str | None = None, *, limits: DotLimits | None = None) -> str:
        """The raw DOT text of a graph, exactly as the driver wrote it (its size checked against `limits`,
        default: the current `gl.DotLimits`, before it is read)."""
        from graphlab.graph.dot_file import read_dot_text

        path = self.dot_path(key)
        with _reading_dot(path):
            return read_dot_text(path, limits=limits)

    def dot_path(self, key: str | None = None) -> Path:
        return self._file(self.meta["graphs"][self._graph_key(key)]["dot"])

    def graph(self, key: str | None = None, *, limits: DotLimits | None = None) -> CudaGraph:
        """The graph, parsed afresh from its raw DOT (so kernel naming follows the installed graphlab).

        Args:
            limits: the most its DOT may hold (`gl.DotLimits`; default: the current ones).

        Raises:
            RecordingError: the DOT is missing, outside the recording, past a limit or not a dump; the message
                names the file (the `DotParseError` is its `__cause__`).
        """
        from graphlab.graph.dot_parser import read_dot

        k = self._graph_key(key)
        path = self.dot_path(k)
        with _reading_dot(path):  # read in pieces: the text is never held whole
            parsed = read_dot(path, limits=limits)
        gpu = self.gpu.replace("NVIDIA ", "")
        entry = self.meta["graphs"][k]
        origin = {field: entry[field] for field in GRAPH_ORIGIN_FIELDS if field in entry}  # e.g. a rank's graph
        return dataclasses.replace(parsed, source=f"{self.name} {k} ({gpu})", metadata=origin)  # title: source

    def stored_model(self, key: str | None = None) -> CudaGraph:
        """The parsed model JSON that recordings made before 2026-12 stored beside the DOT.

        Newer recordings hold the DOT only (`graph(key)` parses it); for them this raises
        RecordingError saying so.
        """
        k = self._graph_key(key)
        entry = self.meta["graphs"][k]
        if "model" not in entry:
            raise RecordingError(f"{self.path}: graph {k!r} has no stored model (only its DOT): use .graph({k!r})")
        data = _read_json(self._file(entry["model"]), self.root)
        try:
            return CudaGraph.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"{self.path / entry['model']}: not a graph model ({exc})") from None

    def results(self, key: str) -> Any:
        """A results file (JSON) named in meta["results"]."""
        if key not in self.meta["results"]:
            raise RecordingError(f"{self.path}: no results {key!r}; it has {', '.join(self.result_names) or 'none'}")
        return _read_json(self._file(self.meta["results"][key]), self.root)

    @property
    def made(self) -> str:
        """Where and when it was made, in words: "recorded on NVIDIA H200 on 2026-12-01"."""
        return made_on(self.meta["provenance"])

    def banner(self) -> str:
        """One line naming where and when the numbers were measured."""
        p = self.meta["provenance"]
        return (
            f"Recorded on {p['gpu']} (driver {p['driver']}), torch {p['torch']}, CUDA {p['cuda']}, "
            f"{str(p['date'])[:10]} by `{p['command']}`"
        )

    def __repr__(self) -> str:
        return f"Recording({self.name!r}, gpu={self.gpu!r}, graphs={self.graph_names}, results={self.result_names})"


def made_on(provenance: Any, verb: str = "recorded") -> str:
    """Where and when a result was made, from its provenance (or a result's conditions): "recorded on NVIDIA H200
    on 2026-12-01"; `verb="measured"` for a result made on this machine. Missing parts are left out."""
    provenance = provenance if isinstance(provenance, dict) else {}
    gpu, date = provenance.get("gpu"), str(provenance.get("date") or "")[:10]
    return verb + (f" on {gpu}" if gpu else "") + (f" on {date}" if date else "")


def _folders(base: Path) -> list[Path]:
    """Every <gpu>/<name> folder under `base` with a meta.json, both names safe, sorted (no glob patterns:
    the names are listed and checked)."""
    found = []
    try:
        gpus = sorted(p for p in base.iterdir() if p.is_dir() and _SAFE_NAME.fullmatch(p.name))
    except OSError:
        return []
    for gpu in gpus:
        try:
            names = sorted(p for p in gpu.iterdir() if _SAFE_NAME.fullmatch(p.name))
        except OSError:
            continue
        found += [p for p in names if (p / "meta.json").exists() or (p / "meta.json").is_symlink()]
    return found


def broken_recordings(root: str | Path | None = None) -> list[tuple[Path, str]]:
    """The recording folders under `root` that do not open, each with why (what `list_recordings` skips)."""
    base = Path(root) if root is not None else recordings_root()
    broken = []
    for folder in _folders(base):
        try:
            Recording.open(folder, root=base)
        except GraphlabError as exc:
            broken.append((folder, str(exc)))
    return broken


def list_recordings(root: str | Path | None = None) -> list[Recording]:
    """Every valid recording under `root` (default: `recordings_root()`), sorted by GPU then name.

    A broken folder is skipped, with a warning naming it and why (`broken_recordings` lists them), so one bad
    recording does not hide the others."""
    base = Path(root) if root is not None else recordings_root()
    found = []
    for folder in _folders(base):
        try:
            found.append(Recording.open(folder, root=base))
        except GraphlabError as exc:  # a recording's DOT limits too (a DotLimitError is no RecordingError)
            warnings.warn(f"skipped a broken recording: {exc}", stacklevel=2)
    return found


def load_recording(name: str, gpu: str | None = None, root: str | Path | None = None) -> Recording:
    """The recording called `name` (on `gpu`, a folder name such as "h200", if given).

    Both are plain names (no separators, `..` or glob characters); the folder and every file it reads must
    stay inside `root` (default: `recordings_root()`), symlinks followed.

    Raises:
        RecordingError: a name that is not plain, no such recording, or it is broken; the message lists what
            exists.
    """
    check_name(name)
    if gpu is not None:
        check_name(gpu, "GPU folder")
    base = Path(root) if root is not None else recordings_root()
    folders = _folders(base)
    matches = [f for f in folders if f.name == name and (gpu is None or f.parent.name == gpu)]
    if not matches:
        have = sorted({f.name for f in folders})
        raise RecordingError(
            f"no recording {name!r}{f' for GPU {gpu!r}' if gpu else ''} under {base}; "
            f"available: {', '.join(have) or 'none'}"
        )
    return Recording.open(matches[0], root=base)


def write_recording(
    folder: str | Path,
    *,
    name: str,
    description: str,
    provenance: dict[str, Any],
    graphs: dict[str, dict[str, Any]],
    results: dict[str, Any],
) -> Recording:
    """Write one recording folder and return it, validated.

    Args:
        graphs: {key: {"dot": raw DOT text, **extra fields for meta}}; each DOT is written to
            "<key>.dot" and parsed again on load. A "model" entry (the parsed `CudaGraph`, which
            older callers pass) is ignored: the DOT is the record.
        results: {key: JSON-ready object}; written to "<key>.json".
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    missing = [k for k in REQUIRED_PROVENANCE if k not in provenance]
    if missing:
        raise RecordingError(f"provenance lacks {', '.join(missing)}")
    meta_graphs: dict[str, Any] = {}
    for key, entry in graphs.items():
        (out / f"{key}.dot").write_text(entry["dot"], encoding="utf-8")
        extra = {k: v for k, v in entry.items() if k not in ("dot", "model")}
        meta_graphs[key] = {"dot": f"{key}.dot", **extra}
    meta_results = {}
    for key, value in results.items():
        (out / f"{key}.json").write_text(json.dumps(value, indent=1), encoding="utf-8")
        meta_results[key] = f"{key}.json"
    meta = {
        "schema": SCHEMA_VERSION,
        "name": name,
        "description": description,
        "provenance": provenance,
        "graphs": meta_graphs,
        "results": meta_results,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return Recording.open(out)


__all__ = [
    "MAX_JSON_BYTES",
    "Recording",
    "RecordingError",
    "broken_recordings",
    "check_name",
    "list_recordings",
    "load_recording",
    "recordings_root",
    "write_recording",
    "gpu_slug",
    "recordings_table",
    "RecordingsTable",
    "made_on",
]


class RecordingsTable(present.Table):
    """The recordings as a table for people (`gl.recordings_table()`); iterating it gives one dict per
    recording with every key (gpu, name, graphs, results, torch, driver, date, description), for code."""

    def __iter__(self) -> Any:
        return iter(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.rows[index]


def _holds(rec: Recording) -> str:
    """What a recording holds, in words with counts: "7 graphs (batch sizes 1 to 64), 3 result files"."""
    graphs = rec.graph_names
    sizes = sorted({int(rec.meta["graphs"][k]["batch_size"]) for k in graphs
                    if isinstance(rec.meta["graphs"][k].get("batch_size"), int)})
    parts = []
    if graphs:
        text = f"{len(graphs)} graph{'s' if len(graphs) != 1 else ''}"
        if len(sizes) > 2:
            text += f" (batch sizes {sizes[0]} to {sizes[-1]})"
        elif sizes:
            text += f" (batch size{'s' if len(sizes) > 1 else ''} {present.listing(sizes)})"
        parts.append(text)
    results = rec.result_names
    if results:
        parts.append(f"{len(results)} result file{'s' if len(results) != 1 else ''}")
    return ", ".join(parts) or "nothing"


_PYTHON_FRAGMENT = re.compile(
    r"(?<![`\w.])(?:%%[a-z]+"  # a cell magic
    r"|[A-Za-z_]\w*=(?:'[^']*'|\"[^\"]*\"|[\w.]+)"  # a keyword argument: weights=None
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\([^()]*\))?"  # a dotted name, maybe called: torch.compile(mode=...)
    r"|[A-Za-z]\w*_\w*)(?![\w`])"  # a snake_case name: make_graphed_callables, copy_
)


def _code_in_words(text: str) -> str:
    """A description with its Python fragments (`weights=None`, `gl.profile`, `%%cudagraph`) shown as code."""
    return _PYTHON_FRAGMENT.sub(lambda m: f"`{m.group(0)}`", text)


def recordings_table(root: str | Path | None = None) -> RecordingsTable:
    """One row per recording: its GPU, its name (what `gl.load_recording` takes), what it holds (how many graphs
    and result files), when and with which torch it was made, and what it is. Iterate it for one dict per
    recording with every key (e.g. for a DataFrame or a docs page)."""
    rows = []
    for rec in list_recordings(root):
        prov = rec.provenance
        rows.append(
            {
                "gpu": rec.gpu,
                "name": rec.name,
                "graphs": ", ".join(rec.graph_names),
                "results": ", ".join(rec.result_names),
                "torch": prov["torch"],
                "driver": prov["driver"],
                "date": str(prov["date"])[:10],
                "description": rec.description,
                "recording": present.Code(rec.name),
                "holds": _holds(rec),
                "what": _code_in_words(rec.description),
            }
        )
    columns = [present.Column("recording", "recording", kind="code"), present.Column("holds", "holds", kind="text"),
               present.Column("what", "what it is", kind="text"), present.Column("gpu", "GPU", kind="text"),
               present.Column("torch", "torch", kind="text"), present.Column("date", "recorded on", kind="text")]
    notes = ["`gl.load_recording(name)` opens one; its `.graph_names` and `.result_names` list what it holds."]
    return RecordingsTable(rows, columns, notes=notes)
