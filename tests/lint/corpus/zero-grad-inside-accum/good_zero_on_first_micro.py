import torch.nn.functional as F

ACCUM = 4


def train(net, data, opt):
    for i, (inputs, targets) in enumerate(data):
        if i % ACCUM == 0:
            opt.zero_grad()
        loss = F.cross_entropy(net(inputs), targets) / ACCUM
        loss.backward()
        if (i + 1) % ACCUM == 0:
            opt.step()
