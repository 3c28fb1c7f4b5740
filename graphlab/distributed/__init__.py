"""Several GPUs: per-device replicas, NCCL collectives inside a graph, tensor-parallel layers.
Pure modules decide what every rank agrees on, plan torchrun launches and read the multi-GPU recordings.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("launch", "results", "rules")
