"""Layer 1: adapters that turn core objects into pictures (Graphviz drawings, plotly figures).

May import the core and graphviz/plotly (lazily where heavy); never torch or widgets.
"""
