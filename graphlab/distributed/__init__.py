"""Several GPUs: per-device replicas, NCCL collectives inside a graph, tensor-parallel layers.
Pure modules plan torchrun launches and read the multi-GPU recordings.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("launch",)
