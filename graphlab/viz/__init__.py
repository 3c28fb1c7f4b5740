"""Layer 1: adapters that turn core objects into pictures (Graphviz drawings, plotly figures).

May import the core and graphviz/plotly (lazily where heavy); never torch or widgets.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ()
