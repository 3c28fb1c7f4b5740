"""Recordings: real GPU runs saved as text, so every notebook and widget also works without a GPU.

Layer 0 (pure): standard library only. JSON and plain text only; never pickle.

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

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphlab.graph.model import CudaGraph
from graphlab.errors import RecordingError

SCHEMA_VERSION = 1
REQUIRED_META = ("schema", "name", "provenance", "graphs", "results")
REQUIRED_PROVENANCE = ("gpu", "driver", "torch", "cuda", "graphlab_version", "git_commit", "command", "date")
_SAFE_FILE = re.compile(r"^[A-Za-z0-9_.-]+$")

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


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordingError(f"{path}: file missing from the recording") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"{path}: cannot read ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordingError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None


def _check_file_name(folder: Path, name: Any, what: str) -> Path:
    if not isinstance(name, str) or not _SAFE_FILE.match(name):
        raise RecordingError(f"{folder / 'meta.json'}: {what} must be a plain file name, got {name!r}")
    return folder / name


def validate_meta(meta: Any, folder: Path) -> dict[str, Any]:
    """Check the structure of meta.json; raise RecordingError naming the first problem."""
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
            path = _check_file_name(folder, entry[part], f"graphs.{key}.{part}")
            if not path.is_file():
                raise RecordingError(f"{path}: file missing from the recording")
    for key, name in meta["results"].items():
        path = _check_file_name(folder, name, f"results.{key}")
        if not path.is_file():
            raise RecordingError(f"{path}: file missing from the recording")
    return meta


@dataclass(frozen=True)
class Recording:
    """One recording folder, validated on load. Files are read lazily."""

    path: Path
    meta: dict[str, Any]

    @classmethod
    def open(cls, path: str | Path) -> Recording:
        folder = Path(path)
        if not folder.is_dir():
            raise RecordingError(f"{folder}: no such recording folder")
        return cls(folder, validate_meta(_read_json(folder / "meta.json"), folder))

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

    def dot(self, key: str | None = None) -> str:
        """The raw DOT text of a graph, exactly as the driver wrote it."""
        return self.dot_path(key).read_text(encoding="utf-8")

    def dot_path(self, key: str | None = None) -> Path:
        return self.path / self.meta["graphs"][self._graph_key(key)]["dot"]

    def graph(self, key: str | None = None) -> CudaGraph:
        """The graph, parsed afresh from its raw DOT (so kernel naming follows the installed graphlab)."""
        from graphlab.graph.dot_parser import parse_dot

        k = self._graph_key(key)
        parsed = parse_dot(self.dot(k), source=str(self.dot_path(k)))  # parse errors name the file
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
        data = _read_json(self.path / entry["model"])
        try:
            return CudaGraph.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"{self.path / entry['model']}: not a graph model ({exc})") from None

    def results(self, key: str) -> Any:
        """A results file (JSON) named in meta["results"]."""
        if key not in self.meta["results"]:
            raise RecordingError(f"{self.path}: no results {key!r}; it has {', '.join(self.result_names) or 'none'}")
        return _read_json(self.path / self.meta["results"][key])

    def banner(self) -> str:
        """One line naming where and when the numbers were measured."""
        p = self.meta["provenance"]
        return (
            f"Recorded on {p['gpu']} (driver {p['driver']}), torch {p['torch']}, CUDA {p['cuda']}, "
            f"{str(p['date'])[:10]} by `{p['command']}`"
        )

    def __repr__(self) -> str:
        return f"Recording({self.name!r}, gpu={self.gpu!r}, graphs={self.graph_names}, results={self.result_names})"


def list_recordings(root: str | Path | None = None) -> list[Recording]:
    """Every valid recording under `root` (default: `recordings_root()`), sorted by GPU then name."""
    base = Path(root) if root is not None else recordings_root()
    found = []
    for meta in sorted(base.glob("*/*/meta.json")):
        found.append(Recording.open(meta.parent))
    return found


def load_recording(name: str, gpu: str | None = None, root: str | Path | None = None) -> Recording:
    """The recording called `name` (on `gpu`, a folder name such as "h200", if given).

    Raises:
        RecordingError: no such recording, or it is broken; the message lists what exists.
    """
    base = Path(root) if root is not None else recordings_root()
    pattern = f"{gpu}/{name}/meta.json" if gpu else f"*/{name}/meta.json"
    matches = sorted(base.glob(pattern))
    if not matches:
        have = sorted({p.parent.name for p in base.glob("*/*/meta.json")})
        raise RecordingError(
            f"no recording {name!r}{f' for GPU {gpu!r}' if gpu else ''} under {base}; "
            f"available: {', '.join(have) or 'none'}"
        )
    return Recording.open(matches[0].parent)


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
    "Recording",
    "RecordingError",
    "list_recordings",
    "load_recording",
    "recordings_root",
    "write_recording",
    "gpu_slug",
    "recordings_table",
]


def recordings_table(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per recording (GPU, name, graphs, results, torch, date), e.g. for a DataFrame."""
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
            }
        )
    return rows
