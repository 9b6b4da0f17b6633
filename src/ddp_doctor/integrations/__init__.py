"""Trainer callbacks (docs/integrations.md): attach the probe, record the logged loss, summarise at the end.

* :mod:`ddp_doctor.integrations.hf` — ``DdpDoctorCallback`` for the HF ``Trainer``;
* :mod:`ddp_doctor.integrations.lightning` — ``DdpDoctorCallback`` for Lightning's ``Trainer``.

Both share :mod:`ddp_doctor.integrations.common`; none is imported by ``import ddp_doctor``.
"""
