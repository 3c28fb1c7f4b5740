"""graphlab.viz: pictures of graphs and results: Graphviz drawings of a captured graph or of two graphs'
difference, and plotly figures of latency, timelines, overhead and buckets.

Draws what the graph, capture, timing and cache packages hold, never torch or widgets: graphviz at the top of
the drawing modules, plotly inside the plot functions. `dag` reads the DAG of any captured graph (`Replayable`).
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("style", "dag", "heat", "banner")
