"""`ddp-doctor watch`: diagnose a run directory while the job writes it (docs/watch.md).

tail.py reads the new records of every rank file (state kept between refreshes), follow.py
diagnoses what accumulated and tracks the changes (verdicts.py), actions.py alerts and stops,
view.py shows it, command.py is the CLI. Above the analysis and the report; nothing imports it.
"""
