"""Watching: every CUDA graph anything in this process captures through PyTorch (torch.compile too).
Pure modules keep what was seen and who captured it, read from the stack.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("frames", "records", "compiled", "kernel_modules")
