import torch


class Evaluator:
    def __init__(self, cfg):
        self.cfg = cfg

    def prepare_model(self, net):
        return torch.nn.parallel.DistributedDataParallel(
            net, device_ids=[self.cfg.local_rank], find_unused_parameters=True  # expect: find-unused-true
        )

    def adapt(self, net, loader, optimizer):
        net = self.prepare_model(net)
        for x in loader:
            loss = net(x).mean()
            loss.backward()
            optimizer.step()
