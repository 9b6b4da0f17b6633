# The loop skips the sync with no_sync on the micro-steps, and a `%` that paces logging comes
# before the update test: nothing to report (the update test `num_iter == step_per_update` is the
# accumulation guard, not the logging `%`).
import contextlib

import torch.nn as nn


def train(model, optimizer, loader, step_per_update, print_freq, device):
    model = nn.parallel.DistributedDataParallel(model, device_ids=[device])
    num_iter = 0
    for idx, (x, y) in enumerate(loader):
        num_iter += 1
        if idx % print_freq == 0:
            print(idx)
        last = num_iter == step_per_update
        with contextlib.nullcontext() if last else model.no_sync():
            loss = nn.functional.cross_entropy(model(x), y) / step_per_update
            loss.backward()
        if num_iter == step_per_update:
            optimizer.step()
            optimizer.zero_grad()
            num_iter = 0
