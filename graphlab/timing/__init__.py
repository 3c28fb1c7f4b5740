"""Timing: eager vs replay latency, measured in short interleaved blocks so both see the same machine.
Also kernel timelines, the host's speed modes, reproductions of a recording, and the typed results.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("results", "host_modes", "claims", "repro_report", "weight_update")
