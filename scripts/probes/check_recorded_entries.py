"""Load every results entry of a recordings folder through the registry, as tests/test_loader_coverage.py does for
the shipped ones: run it on a GPU machine after `graphlab record --out DIR ...` to check that what the studies wrote
reads back through `gl.load`.

    python3 scripts/probes/check_recorded_entries.py DIR      # prints "loaded N entries, M failed, from DIR"
"""
import importlib, pkgutil, sys
import graphlab
from graphlab.loader import load
from graphlab.recordings import list_recordings
from graphlab.results_types import type_for
for info in pkgutil.walk_packages(graphlab.__path__, "graphlab."):
    if info.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(info.name)
    except ImportError:
        pass
root = sys.argv[1]
ok = bad = 0
for rec in list_recordings(root):
    for key in rec.result_names:
        spec = type_for(rec.name, key)
        try:
            load(spec.cls, rec.name, gpu=rec.path.parent.name, root=root, entry=None if spec.composite else key)
            ok += 1
        except Exception as exc:
            bad += 1
            print("FAIL", rec.name, key, type(exc).__name__, exc)
print(f"loaded {ok} entries, {bad} failed, from {root}")
