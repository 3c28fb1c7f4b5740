"""Timing: the one clock and its timed loops (`clock`, `sync`), the schedulers every study runs them in
(`schedulers`: interleaved blocks, open-loop arrivals, throughput windows), eager vs replay latency
sweeps in interleaved blocks (`blocks`, `sweep`), kernel timelines (`timeline`, through the one profiler runner
`profiler` and trace reader `chrome_trace`, which `gl.profile` uses too), the host's speed modes,
reproductions of a recording with their verdict, and the typed results. No module outside this package
reads a clock to time work (tests/test_one_timer.py holds it).
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("results", "host_modes", "claims", "repro_report", "weight_update", "schedulers", "chrome_trace", "options")
