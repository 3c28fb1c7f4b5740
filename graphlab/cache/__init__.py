"""The graph cache: one graph per bucket of shapes, padding up to it, one shared pool, eager fallback.
Pure modules decide buckets and keys, advise which buckets to capture, and keep the cache's statistics.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("buckets", "advisor", "stats", "results", "traces")
