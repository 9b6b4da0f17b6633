"""One process, a few optimizer steps, the loss handed to every logging library that is installed.

Prints the names of the libraries it used as `SOURCES a,b,c` (the test compares with the records).
"""

import importlib.util
import logging
import sys
import tempfile

import torch

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
used = ["stdout", "stderr"]
tmp = tempfile.mkdtemp(prefix="log-sources-")
writer = run = accelerator = None
if importlib.util.find_spec("tensorboard") is not None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=tmp)
    used.append("tensorboard")
if importlib.util.find_spec("wandb") is not None:
    import wandb

    run = wandb.init(mode="offline", dir=tmp, project="zoo")
    used.append("wandb")
from accelerate import Accelerator  # noqa: E402

accelerator = Accelerator(cpu=True)
used.append("accelerate")

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    loss = torch.nn.functional.mse_loss(model(torch.randn(8, 4)), torch.zeros(8, 1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    value = loss.item()
    print(f"step {step} loss {value:.6f}")
    logging.info("step=%d loss=%.6f", step, value)
    if writer is not None:
        writer.add_scalar("train/loss", value, step)
    if run is not None:
        wandb.log({"train/loss": value, "lr": 0.1}, step=step)
    accelerator.log({"loss": loss.detach()}, step=step)
if writer is not None:
    writer.close()
if run is not None:
    run.finish()
print("SOURCES " + ",".join(used))
