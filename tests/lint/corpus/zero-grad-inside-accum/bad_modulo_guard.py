import torch
import torch.nn.functional as F

GRAD_ACCUM = 8


def run_epoch(net, data, opt):
    for i, (inputs, targets) in enumerate(data):
        net.zero_grad(set_to_none=True)  # expect: zero-grad-inside-accum
        loss = F.cross_entropy(net(inputs), targets) / GRAD_ACCUM
        loss.backward()
        if (i + 1) % GRAD_ACCUM == 0:
            opt.step()
