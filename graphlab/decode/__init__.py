"""Decode: a Hugging Face causal LM's one-token decode step with a static KV cache, captured per batch bucket.
The models and the step (models), graphlab's graphs and greedy loop (graphs), four ways timed side by side (ways),
the results as plain data (results), the recorded stand-ins (recorded), the notebook face (api).
Needs the `hf` extra (transformers) for everything but the pure modules.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("results", "recorded", "reading", "options", "buckets", "roofline")
