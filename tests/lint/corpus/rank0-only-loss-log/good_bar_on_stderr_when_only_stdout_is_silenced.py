# Only standard output is taken away off rank 0: the tqdm bar writes to standard error on every
# rank, each with its own loss (nothing is hidden, so nothing is rank 0's alone).
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
        progress_bar.set_description(f"loss: {running / seen:.4f}")


def main(cfg, model, loader, optimizer):
    if cfg.local_rank != 0:
        sys.stdout = open(os.devnull, "w")
    for epoch in range(cfg.epochs):
        train_one_epoch(model, loader, optimizer)
