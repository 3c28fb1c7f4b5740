"""The answers to the notebooks' exercises, which the tests fill in (`graphlab.tour.fill_answers`).

notebook file name -> {answer name -> Python source}. A notebook's exercise cell starts each answer as
`name = None` (the convention of `graphlab.ui.exercise`); the learner never sees these.
"""

ANSWERS: dict[str, dict[str, str]] = {
    "12_llm_decode.ipynb": {"speedup_b1": 'report.timing("eager", 1).p50_us / report.timing("graphlab", 1).p50_us'},
}
