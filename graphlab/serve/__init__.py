"""graphlab.serve: one model on one GPU as a real service (your own or a zoo model), and the load test that
compares its settings.

    request -> router (Starlette app, uvicorn) -> pre-processing (thread pool: tokenize/pad, resize)
            -> dynamic batcher (bounded queue; max batch size, max wait in µs)
            -> GPU worker (its own thread and CUDA stream: eager model or gl.GraphCache)
            -> post-processing (thread pool: top-k) -> response

    >>> import graphlab as gl
    >>> service = gl.serve(gl.ServedModel(my_module, example_input, buckets=[1, 2, 4, 8]))   # doctest: +SKIP
    >>> service = gl.InferenceService(gl.ServeConfig(model="gpt", setting="graphs+batching")).start()  # doctest: +SKIP
    >>> app = gl.create_app(service)    # an ASGI app: for uvicorn, or httpx.ASGITransport   # doctest: +SKIP
    >>> result = gl.run_loadtest("gpt") # eager vs graphs vs graphs+batching, rate sweep     # doctest: +SKIP

Modules, one job each: config (settings, limits, timeouts), payload (request checks), preprocess,
served_model (ServedModel: a model and its request protocol; the wrapped zoo models), models (the zoo as
ServedModels, resolve_model), api (gl.serve), batcher, worker, runners (eager / graph cache),
postprocess, trace (timestamps), service (the pipeline), app (the ASGI app), http (uvicorn with deadlines
and a bounded drain), metrics (/metrics), loadgen (open-loop generator), report (load points and
sweeps), loadtest (the sweep and `graphlab loadtest`), external (servers in their own processes and `hey`),
over_http (what an HTTP client sees, from the `serving_http` recording), figures (the diagram and the load curves, for
notebooks). The recorder behind `graphlab record --models serving` is a study:
`graphlab.studies.serving`.

A feature above the graph cache: it imports graphlab.cache (the cache and its buckets), the zoo, errors,
env and mode; nothing in graphlab imports it but the command line, the serving study and the lazy public
names, and it never imports the notebook UI. Only `app` and `http` need starlette and uvicorn (the
`serve` extra); only `figures` needs plotly and graphviz; the modules in `PURE` need no torch.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("config", "payload", "batcher", "trace", "report", "loadgen", "metrics", "external", "over_http")
