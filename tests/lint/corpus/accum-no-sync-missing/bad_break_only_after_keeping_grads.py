# A pass may continue after its backward without clearing the gradients: the next pass adds to them,
# so the loop accumulates and every backward all-reduces.
import torch


def train(model, opt, data, steps, accum):
    model = torch.nn.parallel.DistributedDataParallel(model)
    for step in range(steps):
        for i in range(accum):
            loss = model(next(data)) / accum
            loss.backward()  # expect: accum-no-sync-missing
            if i < accum - 1:
                continue
            break
        opt.step()
        opt.zero_grad()
