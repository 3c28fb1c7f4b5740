"""The `graphlab` command line.

    graphlab parse FILE.dot            print the parsed graph as JSON (streamed, node by node)
    graphlab render FILE.dot -o OUT    write OUT as .svg, .png or .gv (by suffix); at most --max-nodes drawn
        (both refuse a dump past --max-dot-bytes, --max-dot-nodes or --max-label-chars: 0 lifts a limit)
    graphlab about                     what this machine can do
    graphlab record [--out DIR] ...    (GPU) write recordings: the model zoo, the pitfalls, named experiments
    graphlab repro NAME [--json OUT]   (GPU) re-run a recording's sweep, print now vs recorded
    graphlab loadtest [--model gpt]    (GPU) serve a model, sweep open-loop load over eager/graphs/batching
    graphlab tour [--out DIR]          execute the tutorial notebooks and write the executed copies

Contract: bad input or a missing file exits with status 2 and one line on stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Sequence

from graphlab.env import error_line, speak_as
from graphlab.errors import BadInputError, GraphlabError

RENDER_SUFFIXES = (".svg", ".png", ".gv", ".dot")
MAX_DRAWN_NODES = 2000  # graphlab.viz.drawing.MAX_DRAWN_NODES (not imported: `graphlab --help` stays light)
DOT_TIMEOUT_S = 120.0  # graphlab.viz.drawing.DOT_TIMEOUT_S


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors follow the one-line, exit-2 contract."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _limits(args: argparse.Namespace) -> object:
    from graphlab.graph.dot_limits import limits_from_flags

    return limits_from_flags(args.max_dot_bytes, args.max_dot_nodes, args.max_label_chars)


def _add_limit_flags(p: argparse.ArgumentParser) -> None:
    # graphlab.graph.dot_limits.DEFAULT_LIMITS (not imported: `graphlab --help` stays light)
    p.add_argument("--max-dot-bytes", type=int, default=None, metavar="N",
                   help="refuse a file larger than N bytes (default 6,000,000; 0: no limit)")
    p.add_argument("--max-dot-nodes", type=int, default=None, metavar="N",
                   help="refuse a dump of more than N nodes (default 10,000; 0: no limit)")
    p.add_argument("--max-label-chars", type=int, default=None, metavar="N",
                   help="refuse a node label longer than N characters (default 5,700; 0: no limit)")


def _cmd_parse(args: argparse.Namespace) -> int:
    from graphlab.graph.dot_parser import read_dot
    from graphlab.graph.model import node_field_names

    graph = read_dot(args.file, limits=_limits(args))
    # the contract: kernels always carry the launch fields the driver can report (name, grid, block,
    # shared_bytes: the Node schema's kernel fields that the graph API reports too), null when not shown;
    # written node by node (a million-node dump never becomes one dict or one string)
    graph.write_json(sys.stdout, indent=None if args.compact else 1,
                     kernel_fields=node_field_names(kind="kernel", census=True))
    sys.stdout.write("\n")
    return 0


def _cmd_render(args: argparse.Namespace) -> int:
    from graphlab.graph.dot_parser import read_dot
    from graphlab.viz.drawing import render

    out = Path(args.output)
    if out.suffix.lower() not in RENDER_SUFFIXES:
        raise BadInputError(f"cannot tell the format of {out}: use a name ending in .svg, .png or .gv")
    if args.max_nodes < 0 or args.timeout <= 0:
        raise BadInputError(f"--max-nodes must be 0 (no limit) or more, --timeout more than 0 seconds; got "
                            f"--max-nodes {args.max_nodes} --timeout {args.timeout:g}")
    graph = read_dot(args.file, limits=_limits(args))
    drawing = render(graph, collapse=not args.no_collapse, max_nodes=args.max_nodes or None)
    drawing.save(out, timeout_s=args.timeout)
    folded = f", {len(drawing.collapsed)} repeated block(s) drawn once" if drawing.collapsed else ""
    capped = f"; {drawing.left_out:,} more left out (--max-nodes {args.max_nodes:,})" if drawing.left_out else ""
    print(f"wrote {out}: {len(drawing.node_ids):,} of {len(graph):,} nodes drawn{folded}{capped}", file=sys.stderr)
    return 0


def _cmd_about(args: argparse.Namespace) -> int:
    from graphlab.about import environment

    env = environment()
    if args.json:
        json.dump(env.to_dict(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(env)
    return 0


def _cmd_record(args: argparse.Namespace) -> int:
    from graphlab.studies.record import record_main

    return record_main(args)


def _cmd_loadtest(args: argparse.Namespace) -> int:
    from graphlab.loadtest.api import loadtest_main

    return loadtest_main(args)


# graphlab.timing.repro_report.REPRO_MAX_EXTRA_S (not imported: `graphlab --help` stays light)
REPRO_MAX_EXTRA_S = 40.0


def _cmd_repro(args: argparse.Namespace) -> int:
    from graphlab.timing.repro import repro_main

    return repro_main(args)


def _cmd_tour(args: argparse.Namespace) -> int:
    from graphlab.tour import run_tour

    return run_tour(out_dir=Path(args.out), notebooks=args.notebooks, timeout_s=args.timeout, check=args.check)


LOADTEST_HELP = "(GPU) serve a zoo model and sweep open-loop load over its settings"
#: the commands whose flags need modules of their own (the studies' catalog, the load test's plan): declared in
#: full only when the command line names them, so `graphlab parse` does not import them
_HEAVY_FLAGS = ("record", "loadtest")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. `command`: the one the command line names (None: unknown, declare every command's
    flags); another command's `record` and `loadtest` are declared without their flags (never parsed)."""
    full = command is None or command in _HEAVY_FLAGS
    parser = _Parser(prog="graphlab", description="Capture, draw and time CUDA Graphs for PyTorch inference.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("parse", help="parse a cudaGraphDebugDotPrint dump and print it as JSON")
    p.add_argument("file", help="a .dot file written by cudaGraphDebugDotPrint")
    p.add_argument("--compact", action="store_true", help="one line of JSON")
    _add_limit_flags(p)
    p.set_defaults(func=_cmd_parse)

    p = sub.add_parser("render", help="draw a DOT dump as .svg, .png or .gv")
    p.add_argument("file")
    p.add_argument("-o", "--output", required=True, help="output file; the suffix picks the format")
    p.add_argument("--no-collapse", action="store_true", help="draw repeated blocks one by one")
    p.add_argument("--max-nodes", type=int, default=MAX_DRAWN_NODES,
                   help=f"draw at most this many nodes, the first in topological order (default {MAX_DRAWN_NODES:,}; 0: all)")
    p.add_argument("--timeout", type=float, default=DOT_TIMEOUT_S,
                   help=f"seconds Graphviz's dot may take to lay it out (default {DOT_TIMEOUT_S:g})")
    _add_limit_flags(p)
    p.set_defaults(func=_cmd_render)

    p = sub.add_parser("about", help="what this machine can do")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_about)

    record_help_text = "(GPU) record the model zoo, the pitfalls and named experiments"
    if not full:
        sub.add_parser("record", help=record_help_text)
        sub.add_parser("loadtest", help=LOADTEST_HELP)
    else:
        _add_record(sub, record_help_text)
        _add_loadtest(sub)

    p = sub.add_parser("repro", help="(GPU) re-run a recording's latency sweep here and compare, point by point")
    p.add_argument("name", help="a recording with a sweep, e.g. gpt (see graphlab about / gl.list_recordings())")
    p.add_argument("--gpu", default=None, help="the recording's GPU folder, e.g. h200 (default: the first found)")
    p.add_argument("--key", default="sweep", help="which results of the recording (default sweep)")
    p.add_argument("--pairs", type=int, default=None, help="pairs per batch size (default: the recording's)")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the comparison and the new sweep as JSON")
    p.add_argument("--max-extra-s", type=float, default=REPRO_MAX_EXTRA_S,
                   help="seconds of extra rounds to wait for the recording's host speed (default %(default)g; 0: none)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless the graph call's wait (GPU) part came back within 3%% and the paired speedup "
                        "at the recording's host speed within 10%%, or when too few pairs ran at that speed")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_repro)

    p = sub.add_parser("tour", help="execute the tutorial notebooks and write executed copies")
    p.add_argument("--out", default="out/tour", help="folder for the executed notebooks (default out/tour)")
    p.add_argument("--timeout", type=int, default=600, help="per-cell timeout in seconds")
    p.add_argument("--check", action="store_true",
                   help="exit 1 when the output check finds anything a learner should not meet (raw reprs, NaN, "
                        "keys as headers, unreadable figures, ...): graphlab.output_check")
    p.add_argument("notebooks", nargs="*", help="notebooks to run (default: all in notebooks/)")
    p.set_defaults(func=_cmd_tour)
    return parser


def _add_record(sub: argparse._SubParsersAction, help_text: str) -> None:
    # the experiments are read from the studies' source, not imported: `graphlab record --help` needs no torch
    from graphlab.studies.catalog import record_help

    p = sub.add_parser("record", help=help_text,
                       description="Capture and measure on this GPU; write each recording, with its provenance, "
                                   "to OUT/<gpu>/<name>.",
                       epilog=record_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="data/recordings", help="root folder (default data/recordings)")
    p.add_argument("--models", nargs="+", default=None, metavar="NAME",
                   help="recordings to make (default: every zoo model and the pitfalls; listed below)")
    p.add_argument("--batch-sizes", "--buckets", nargs="+", type=int, default=None,
                   help="batch sizes (default per model; decode_scale: its buckets)")
    p.add_argument("--ways", nargs="+", default=None, metavar="WAY",
                   help="decode_scale: the ways to run in this call (default all: eager, reduce-overhead, graphlab, "
                        "graphlab+compile)")
    p.add_argument("--no-sweep", action="store_true", help="graphs only, skip the latency sweeps")
    p.add_argument("--repeats", type=int, default=None, help="timed repetitions per point (default per sweep)")
    p.set_defaults(func=_cmd_record)


def _add_loadtest(sub: argparse._SubParsersAction) -> None:
    # the load test's flags are declared with its plan, the service's by ServeConfig (neither imports torch)
    from graphlab.loadtest.plan import LoadPlan

    p = sub.add_parser("loadtest", help=LOADTEST_HELP)
    LoadPlan.add_flags(p)
    p.set_defaults(func=_cmd_loadtest)


def main(argv: Sequence[str] | None = None) -> int:
    speak_as(cli=True)  # errors now give flags (`--device cpu`), not Python calls (`device='cpu'`)
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        args = build_parser(words[0] if words and not words[0].startswith("-") else None).parse_args(words)
        func: Callable[[argparse.Namespace], int] = args.func
        return func(args)
    except _UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except (GraphlabError, FileNotFoundError, IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        print(error_line("graphlab", exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("graphlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        speak_as(cli=False)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["DOT_TIMEOUT_S", "MAX_DRAWN_NODES", "RENDER_SUFFIXES", "build_parser", "main"]
