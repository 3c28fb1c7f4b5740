"""Layer 3: notebook user interface (widgets, the %%cudagraph magic)."""
