"""Studies: the experiments behind every recording (`graphlab record`) and benchmark figure.
No library module imports this package; the command line and the notebooks do.
"""
