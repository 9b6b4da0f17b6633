"""Renderers of a :class:`~ddp_doctor.analysis.diagnose.Diagnosis`: text (rich), JSON and HTML.

Renderers only format; every number comes from the analysis.
"""
