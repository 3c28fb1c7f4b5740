"""Layer 0: the pure core (graph model, DOT parser, kernel names, diff, results, recordings).

Standard library only. Nothing here may import torch, graphviz, plotly, pandas or widgets;
tests/test_layers.py enforces it.
"""
