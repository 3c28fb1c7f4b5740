"""Conditional nodes: IF, IF/ELSE, WHILE and SWITCH inside one CUDA graph, with PyTorch bodies.
Also which kinds this machine supports, and the typed results of the conditional studies.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("results",)
