"""A complete 2-rank gloo run; rank ABORT_RANK then aborts at interpreter teardown (no probe code).

The abort is registered with atexit *before* `import torch`, so it runs after every handler
registered later (atexit is last-in, first-out), the probe's `end` record included: what the
torch/gloo teardown race looks like from outside (SIGABRT after the last step). ABORT_AT=loop
makes it a real crash instead: rank ABORT_RANK aborts in the middle of training.

The teardown abort waits a moment first, as the real race does (it strikes while the interpreter
finalizes, after the other ranks are done): aborting at once would let torchrun SIGTERM a slower
rank before its exit handler wrote its last step, and the run could not be shown complete.
"""

import atexit
import os
import time

WHEN = os.environ.get("ABORT_AT", "teardown")
MINE = os.environ.get("RANK") == os.environ.get("ABORT_RANK", "1")


def _abort_late() -> None:
    time.sleep(3.0)
    os.abort()


if WHEN == "teardown" and MINE:
    atexit.register(_abort_late)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    if WHEN == "loop" and MINE and step == 1:
        os.abort()
    opt.zero_grad()
    model(torch.randn(2, 4)).pow(2).mean().backward()
    opt.step()
if WHEN == "exception" and MINE:
    raise RuntimeError("boom after the loop")
dist.destroy_process_group()
