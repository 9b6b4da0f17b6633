"""The explicit fallback for launchers that drop the environment: `ddp_doctor.attach()` first."""

import sys

import ddp_doctor

ddp_doctor.attach(run_dir=sys.argv[1], every=1)

import torch  # noqa: E402
from toy import FEATURES, make_model  # noqa: E402

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    model(torch.ones(2, FEATURES)).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
