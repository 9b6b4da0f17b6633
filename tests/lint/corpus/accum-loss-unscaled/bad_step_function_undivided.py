# The step function backprops the raw criterion loss on every call and steps every `accum` calls:
# the update is the sum of the micro-batch gradients.
import torch.nn.functional as F


def train_step(model, optimizer, x, y, step, accum):
    loss = F.cross_entropy(model(x), y)
    loss.backward()  # expect: accum-loss-unscaled
    if (step + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
