"""A 2-rank gloo DDP run in which rank FAIL_RANK fails at step FAIL_STEP (no probe code).

FAIL_HOW: `raise` (an unhandled RuntimeError whose text is FAIL_MESSAGE), `exit` (sys.exit(3)),
`kill` (SIGKILL to itself). The other ranks then block in the next all-reduce until torchrun
stops them, as in a real job. With FAIL_ATTEMPT=N it fails only in torchrun's attempt N
(TORCHELASTIC_RESTART_COUNT), so `--max-restarts 1` and FAIL_ATTEMPT=0 restart once and succeed.
"""

import os
import signal
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

HOW = os.environ.get("FAIL_HOW", "raise")
FAIL_RANK = int(os.environ.get("FAIL_RANK", "1"))
FAIL_STEP = int(os.environ.get("FAIL_STEP", "5"))
MESSAGE = os.environ.get("FAIL_MESSAGE", "boom at step 5")
STEPS = 8
ATTEMPT = os.environ.get("FAIL_ATTEMPT")
if ATTEMPT is not None and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != ATTEMPT:
    FAIL_RANK = -1  # not the attempt that fails

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(STEPS):
    if dist.get_rank() == FAIL_RANK and step == FAIL_STEP:
        if HOW == "raise":
            raise RuntimeError(MESSAGE)
        if HOW == "exit":
            sys.exit(3)
        os.kill(os.getpid(), signal.SIGKILL)
    opt.zero_grad()
    model(torch.randn(2, 4)).pow(2).mean().backward()
    opt.step()
dist.destroy_process_group()
