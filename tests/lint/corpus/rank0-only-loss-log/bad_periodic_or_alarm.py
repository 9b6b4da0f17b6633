# MSN style: `if step % freq == 0 or isnan(loss)` runs periodically whatever the loss is: a log,
# not only an alarm.
import math

import torch.distributed as dist


def train(model, loader, optimizer, log_freq):
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if dist.get_rank() == 0:
            if step % log_freq == 0 or math.isnan(loss.item()):
                print(f"step {step} loss {loss.item():.4f}")  # expect: rank0-only-loss-log
