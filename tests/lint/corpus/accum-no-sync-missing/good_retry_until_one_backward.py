# The inner loop retries micro-batches until one backward succeeds, then leaves: one backward per
# optimizer step, so there is nothing to accumulate and no all-reduce to skip.
import torch


def train(model, opt, data, steps, tries):
    model = torch.nn.parallel.DistributedDataParallel(model)
    for step in range(steps):
        done = False
        for _ in range(tries):
            try:
                loss = model(next(data)) / tries
                if torch.isnan(loss):
                    opt.zero_grad()
                    continue
                loss.backward()
                if any(p.grad is not None and torch.isnan(p.grad).any() for p in model.parameters()):
                    opt.zero_grad()
                    continue
                done = True
                break
            except RuntimeError:
                opt.zero_grad()
                continue
        if done:
            opt.step()
            opt.zero_grad()
