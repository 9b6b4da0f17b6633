"""Every `run --set` key, in the order help, docs and the step hooks use.

To add an intervention: write `interventions/<family>.py` with an ``INTERVENTIONS`` tuple of
:class:`~ddp_doctor.probe.interventions.base.Intervention`, add the module to :data:`FAMILIES`,
add a scenario test (tests/experiments/test_interventions.py); `python -m ddp_doctor.gendocs --write`
regenerates the docs table. Importing this imports no torch.
"""

from __future__ import annotations

from ddp_doctor.probe.interventions import adam, clip, compile, ddp, lr, sampler, seed
from ddp_doctor.probe.interventions.base import Intervention

# Step hooks run in this order: Adam settings, then clipping, then the lr scaling.
FAMILIES = (compile, adam, clip, lr, ddp, sampler, seed)

INTERVENTIONS: dict[str, Intervention] = {i.key: i for family in FAMILIES for i in family.INTERVENTIONS}
