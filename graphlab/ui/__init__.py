"""The notebook UI: the `%%cudagraph` magic, the graph and diff inspectors, the latency lab.
Widgets over the pure graph model and recorded results; they never import the service."""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("exercise",)
