"""Audit: find what makes a graph replay without error and answer wrong (`gl.audit`): values and addresses baked at
capture, outputs kept across replays, random numbers that repeat, static inputs replaced, padding that reaches the
real rows, and a CUDA error that stops it all.

The findings, the causes, the argument-word rule and the launch comparison are pure (tested on CPU with synthetic
data); `api.py`, the checks and `kernel_args.py` (cuda-bindings) hold the torch part.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("causes", "findings", "arg_words", "launch_diff", "step_source", "recorded")
