# Versatile-Diffusion: the evaluation container wraps the network for distributed sampling; no
# backward runs through that wrap, so DDP never searches for unused parameters there.
import torch


class exec_container:
    def __init__(self, cfg):
        self.cfg = cfg


class eval(exec_container):  # noqa: A001 - the repository's own name
    def prepare_model(self, net):
        if self.cfg.world_size > 1:
            net = torch.nn.parallel.DistributedDataParallel(
                net, device_ids=[self.cfg.local_rank], find_unused_parameters=True
            )
        return net

    @torch.no_grad()
    def main(self, net, loader):
        net = self.prepare_model(net)
        return [net(x) for x in loader]


def train(net, loader, optimizer):
    for x in loader:
        loss = net(x).mean()
        loss.backward()
        optimizer.step()
