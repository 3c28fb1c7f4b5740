"""Layer 2: everything that touches `torch.cuda` (capture, timing, census, zoo models, recording).

May import the core and torch; never plotly, graphviz or widgets, so it runs on the GPU machine as is.
"""
