"""Capture: PyTorch code into a CUDA graph through one engine, from a function, a `with` block or a cell.
Also the graph surface every graph shares, replay with checked inputs, verification, and why a capture failed.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("diagnose", "surface", "module_spans")
