"""Profile: where the time goes inside a CUDA graph replay, node by node, module by module.
Matches torch.profiler's kernel events inside a `cudaGraphLaunch` to the DOT's nodes, records which module
launched each node at capture, and finds the replay's critical path (with a what-if).

The matching, the module assignment, the critical path and the result are pure (tested on CPU on recorded
traces); `api.py` holds the torch part (hooks at capture, torch.profiler around replays).
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("events", "match", "modules", "critical", "results", "recorded")
