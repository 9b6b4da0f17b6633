"""Analysis: pure functions from a read run directory to quantities, findings and verdicts.

Never imports torch or torch.distributed; works on numpy columns from :mod:`ddp_doctor.rundir.reader`.
"""
