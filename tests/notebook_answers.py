"""The answers to the notebooks' exercises, which the tests fill in (`graphlab.tour.fill_answers`).

notebook file name -> {answer name -> Python source}. A notebook's exercise cell starts each answer as
`name = None` (the convention of `graphlab.ui.exercise`); the learner never sees these.
"""

ANSWERS: dict[str, dict[str, str]] = {
    "11_where_the_time_goes.ipynb": {"top_module": "prof64.by_module(depth=2).module[0]"},
    "12_llm_decode.ipynb": {"speedup_b1": 'report.timing("eager", 1).p50_us / report.timing("graphlab", 1).p50_us'},
}
