"""graphlab.serve: one model on one GPU as a real service (your own or a zoo model), behind HTTP, one process per
GPU or as Ray Serve replicas.

    request -> router (Starlette app, uvicorn) -> pre-processing (thread pool: tokenize/pad, resize)
            -> dynamic batcher (bounded queue; max batch size, max wait in µs)
            -> GPU worker (its own thread and CUDA stream: eager model or gl.GraphCache)
            -> post-processing (thread pool: top-k) -> response

    >>> import graphlab as gl
    >>> service = gl.serve(gl.ServedModel(my_module, example_input, buckets=[1, 2, 4, 8]))   # doctest: +SKIP
    >>> service = gl.InferenceService(gl.ServeConfig(model="gpt", setting="graphs+batching")).start()  # doctest: +SKIP
    >>> app = gl.create_app(service)    # an ASGI app: for uvicorn, or httpx.ASGITransport   # doctest: +SKIP

Modules, one job each: config (settings, limits, timeouts; the flags, environment and bucket strings of every
front door), payload (request checks), oip (the Open Inference Protocol's routes, datatypes, request checks and
binary framing, no tensors), preprocess, served_model (ServedModel: a model and its request protocol;
the wrapped zoo models), models (the zoo as ServedModels, resolve_model), api (gl.serve), batcher, worker,
runners (eager / graph cache), postprocess, trace (timestamps), answer (an answer shown as tables), service (the
pipeline), app (the ASGI app), http (uvicorn with deadlines and a bounded drain), metrics (/metrics),
`__main__` (`python -m graphlab.serve`), ray_deployment (the service as Ray Serve replicas), ray_proxy (the
middleware Ray's HTTP proxies load: Ray's own refusals in JSON, no torch). The load test that
compares its settings is its own package, `graphlab.loadtest`.

A feature above the graph cache: it imports graphlab.cache (the cache and its buckets), the zoo, errors,
env and mode; nothing in graphlab imports it but the load test, the command line, the serving studies and the
lazy public names, and it never imports the notebook UI. Only `app` and `http` need starlette and uvicorn (the
`serve` extra); the modules in `PURE` need no torch.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("config", "payload", "oip", "batcher", "trace", "metrics", "answer", "ray_proxy")
