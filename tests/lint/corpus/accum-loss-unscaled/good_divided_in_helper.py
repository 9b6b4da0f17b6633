import torch.nn.functional as F

ACCUM_STEPS = 4


def scaled_loss(model, x, y):
    loss = F.cross_entropy(model(x), y)
    return loss / ACCUM_STEPS


def train(model, loader, opt):
    for i, (x, y) in enumerate(loader):
        loss = scaled_loss(model, x, y)
        loss.backward()
        if (i + 1) % ACCUM_STEPS == 0:
            opt.step()
            opt.zero_grad()
