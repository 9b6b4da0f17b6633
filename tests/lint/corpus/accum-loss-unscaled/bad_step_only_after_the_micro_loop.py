# The step after an inner micro-batch loop is the accumulation itself, not a step of each backward.
import torch.nn.functional as F


def train(model, batches, optimizer, accum_steps):
    for chunk in batches:
        for x, y in chunk:
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # expect: accum-loss-unscaled
        optimizer.step()
        optimizer.zero_grad()


def train_zero_grad_every_micro_step(model, loader, optimizer, accum_steps):
    # zero_grad later in each micro-step (zero-grad-inside-accum's bug) is not read as a discard:
    # the loss is still undivided for the accumulation the code intends
    for i, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # expect: accum-loss-unscaled
        if (i + 1) % accum_steps == 0:
            optimizer.step()
        optimizer.zero_grad()  # expect: zero-grad-inside-accum
