"""Studies: the experiments behind every recording (`graphlab record`) and benchmark figure.
No library module imports this package; the command line and the notebooks do, one module at a time.

A study that `graphlab record` can run defines `RECORDING = "<name>"` and `record(out_root, prov)`
(`graphlab record --help` lists them). The studies a notebook calls, by module (each live on a GPU, or
answered from its recording in recorded mode):

    from graphlab.studies.cache import cache_figures                       # notebooks 05, 06
    from graphlab.studies.traffic import traffic_replay                    # notebook 06
    from graphlab.studies.overhead_report import overhead_table            # notebook 03
    from graphlab.studies.replica_throughput import replica_throughput     # notebook 07
    from graphlab.studies.watch_examples import watch_example, WatchExample           # notebook 10
    from graphlab.studies.watch_overhead import watch_overhead, WatchOverhead         # notebook 10
    from graphlab.studies.conditional.early_exit import early_exit_study   # notebook 08, and its siblings

Importing this package imports nothing: each study module imports torch (or not) itself.
"""

#: the modules of this package that import no torch, plotly, graphviz or widget library
PURE = ("catalog", "overhead_report")
