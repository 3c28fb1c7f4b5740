"""The graph: a captured CUDA graph as typed nodes and edges, read from a `cudaGraphDebugDotPrint` dump.
Pure modules read, query, compare and name graphs anywhere; `export` and `census` read them off a live graph.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("model", "node_json", "dot_syntax", "dot_limits", "dot_file", "dot_labels", "dot_templates", "dot_parser", "kernel_names",
        "demangle", "structure", "diff")
