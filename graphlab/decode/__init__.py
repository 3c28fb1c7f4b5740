"""Decode: a Hugging Face causal LM's one-token decode step with a static KV cache, captured per batch bucket.
The models and the step (models), one KV cache shared by every bucket (shared_cache), graphlab's graphs and greedy
loop (graphs), four ways timed side by side (ways), the results as plain data (results), the recorded stand-ins
(recorded), the notebook face (api); at 8B scale: the roofline's arithmetic (roofline) and its GPU rates
(roofline_gpu), one way run per bucket (scale_run), the recording's parts merged (scale).
Needs the `hf` extra (transformers) for everything but the pure modules.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("results", "recorded", "reading", "options", "buckets", "roofline", "scale")
