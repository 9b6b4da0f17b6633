# The step after an inner micro-batch loop is the accumulation itself, not a step of each backward.
import torch.nn.functional as F


def train(model, batches, optimizer, accum_steps):
    for chunk in batches:
        for x, y in chunk:
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # expect: accum-loss-unscaled
        optimizer.step()
        optimizer.zero_grad()
