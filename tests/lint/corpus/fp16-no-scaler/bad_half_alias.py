import torch as th
from torch import amp


def run(net, data, opt):
    for inputs in data:
        with amp.autocast("cuda", th.half):  # expect: fp16-no-scaler
            out = net(inputs).sum()
        out.backward()
        opt.step()
