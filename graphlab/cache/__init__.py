"""The graph cache: one graph per bucket of shapes, padding up to it, one shared pool, eager fallback.
Pure modules decide (bucket policies, which graph serves a call), advise which buckets to capture, and keep the
cache's statistics; graph_cache holds the graphs, captures on a miss through a backend, and replays.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("buckets", "plan", "advisor", "stats", "results", "traces", "options")
