"""The run directory contract (docs/run-format.md): the typed records the probe writes, the
manifests, the reader that turns a directory into columns and problems, and the teardown verdict.

Imports only ddp_doctor.core; the probe writes through it, the analysis reads through it.
"""
