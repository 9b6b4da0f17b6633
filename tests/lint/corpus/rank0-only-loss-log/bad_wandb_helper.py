import os

import wandb


def train_step(model, batch, optimizer):
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.detach()


def fit(model, loader, optimizer):
    local_rank = int(os.environ["LOCAL_RANK"])
    for batch in loader:
        step_loss = train_step(model, batch, optimizer)
        if local_rank == 0:
            wandb.log({"train/loss": step_loss.item()})  # expect: rank0-only-loss-log
