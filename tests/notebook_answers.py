"""The answers to the notebooks' exercises, which the tests fill in (`graphlab.tour.fill_answers`).

notebook file name -> {answer name -> Python source}. A notebook's exercise cell starts each answer as
`name = None` (the convention of `graphlab.ui.exercise`); the learner never sees these. The numbers are those
of the recordings the notebooks run from without a GPU (data/recordings/h200): a new recording may change them,
and then the test that fills them in says which.
"""

ANSWERS: dict[str, dict[str, str]] = {
    "00_start_here.ipynb": {"my_launches": "44"},
    "01_first_capture.ipynb": {"my_extra_nodes": "1"},
    "02_pitfalls.ipynb": {"my_cause": '"host_sync"'},
    "03_why_graphs.ipynb": {"my_batch_size": "32"},
    "04_reading_the_graph.ipynb": {"my_removed": "12"},
    "05_graph_cache.ipynb": {"my_padding": "(4 - 3) + (8 - 5) + (8 - 7) + (4 - 3)"},
    "06_dynamic_shapes.ipynb": {"my_ratio": "12.6 / (0.404 + 0.142)"},
    "07_multi_gpu.ipynb": {"my_bucket": "16", "my_padding": "4 * 16 - (5 + 2 + 9 + 3)"},
    "08_conditional_nodes.ipynb": {"my_freed_ms": "10.5 - 0.371"},
    "09_serving.ipynb": {"my_gain": 'result.knees()["eager+batching"] / result.knees()["eager"]'},
    "10_what_did_compile_capture.ipynb": {"kernels_saved": "44 - 32"},
    "11_where_the_time_goes.ipynb": {"my_idle_ratio": "(prof.idle_us / prof.span_us) / (prof64.idle_us / prof64.span_us)"},
    "12_llm_decode.ipynb": {"speedup_b1": 'report.timing("eager", 1).p50_us / report.timing("graphlab", 1).p50_us'},
}
