"""The runtime probe: runs inside every training process and records what each rank does.

`ddp-doctor run` injects it through `inject/sitecustomize.py`; `ddp_doctor.attach()` starts it
explicitly. Nothing here imports the analysis or the renderers, and no hook may raise into user
code (see `state.guarded`). The records it writes are specified in docs/run-format.md.
"""
