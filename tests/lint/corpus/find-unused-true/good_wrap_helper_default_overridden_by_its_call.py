# The helper's default is True, but the only call passes False: DDP runs without the search.
from torch.nn.parallel import DistributedDataParallel


def distribute_model(model, device, find_unused_paras=True):
    return DistributedDataParallel(model, device_ids=[device], find_unused_parameters=find_unused_paras)


def main(model, loader, optimizer, device):
    model = distribute_model(model, device, find_unused_paras=False)
    for x in loader:
        loss = model(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
