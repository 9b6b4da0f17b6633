# MLPerf RNN-T style: a NaN loss skips the batch, every healthy micro-batch runs backward on the
# DDP model (apex's all-reduces on every backward too), the optimizer steps once per window.
import torch
from apex.parallel import DistributedDataParallel


def train(model, loader, optimizer, loss_fn, args):
    model = DistributedDataParallel(model)
    accumulated_batches = 0
    for batch in loader:
        if accumulated_batches == 0:
            optimizer.zero_grad()
        loss = loss_fn(model(batch)) / args.grad_accumulation_steps
        if torch.isnan(loss).any():
            print("WARNING: loss is NaN; skipping update")
        else:
            loss.backward()  # expect: accum-no-sync-missing
            accumulated_batches += 1
        if accumulated_batches % args.grad_accumulation_steps == 0:
            optimizer.step()
            accumulated_batches = 0
