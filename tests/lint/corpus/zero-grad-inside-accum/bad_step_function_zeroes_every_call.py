# The step function zeroes the gradients on every call, then steps only every `accum` calls: each
# update sees the last micro-batch only.
import torch


def train_step(model, optimizer, batch, step, accum):
    optimizer.zero_grad()  # expect: zero-grad-inside-accum
    loss = model(batch).mean() / accum
    loss.backward()
    if (step + 1) % accum == 0:
        optimizer.step()


def main(model, loader, accum):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, batch in enumerate(loader):
        train_step(model, optimizer, batch, step, accum)
