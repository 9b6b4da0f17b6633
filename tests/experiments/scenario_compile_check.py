"""A compiled tiny MLP, 3 optimizer steps, probe attached at level full with the compile check.

Usage: python scenario_compile_check.py RUN_DIR. The compile_check instrument is installed by
hand until the probe's start-up lists it (see docs/experiments.md).
"""

import sys

import ddp_doctor.probe.attach as attach

attach.attach(run_dir=sys.argv[1], level="full", every=1)

import torch  # noqa: E402

from ddp_doctor.probe.instruments import compile_check  # noqa: E402

compile_check.install()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = compiled(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
