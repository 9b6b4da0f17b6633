# ``sys.stdout = sys.stderr = open(os.devnull, "w")`` off local rank 0: a tqdm bar writes to
# standard error, so its running loss is rank 0's own.
import os
import sys

from tqdm import tqdm


def train_one_epoch(model, loader, optimizer):
    running, seen = 0.0, 0
    progress_bar = tqdm(enumerate(loader), total=len(loader))
    for step, (x, y) in progress_bar:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        running += loss.item() * x.size(0)
        seen += x.size(0)
        progress_bar.set_description(f"loss: {running / seen:.4f}")  # expect: rank0-only-loss-log


def main(cfg, model, loader, optimizer):
    if cfg.local_rank != 0:
        f = open(os.devnull, "w")
        sys.stdout = sys.stderr = f
    for epoch in range(cfg.epochs):
        train_one_epoch(model, loader, optimizer)
