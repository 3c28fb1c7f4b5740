"""graphlab.loadtest: the load-test bench of the service (`graphlab.serve`): open-loop load at fixed rates over each
setting, what it measured, and the figures that show it.

    >>> import graphlab as gl
    >>> result = gl.run_loadtest("gpt")   # eager vs graphs vs graphs+batching, rate sweep     # doctest: +SKIP
    >>> gl.plot_load_curves(result)                                                      # doctest: +SKIP

Modules, one job each: loadgen (the open-loop generator and its transports: in process, the ASGI app, real
sockets), plan (`LoadPlan`: what one load test runs; its flags), api (`gl.run_loadtest` and `graphlab loadtest`:
the sweep), report (`LoadPoint`, `LoadTest`: load points and sweeps), protocols (one request on the wire in each
protocol the service speaks: graphlab's JSON, the Open Inference Protocol as JSON or binary tensors), external
(servers in their own processes, `hey`, the capacity rule), over_http (`HttpServing`: what an HTTP client sees,
from the `serving_http` recording), figures (the pipeline diagram and the load curves, for
notebooks). The recorders behind `graphlab record --models serving serving_http` are studies
(`graphlab.studies.serving`, `graphlab.studies.serving_http`).

It drives the service from outside: it imports graphlab.serve (never the other way), and nothing in graphlab
imports it but the command line, the serving studies and the lazy public names. Only `figures` needs plotly and
graphviz; the modules in `PURE` need no torch.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("loadgen", "plan", "report", "protocols", "external", "over_http")
