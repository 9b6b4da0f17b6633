# A wrap helper hands its own parameter to DDP: its default is True (no call changes it), or a
# call passes True by keyword.
from torch.nn.parallel import DistributedDataParallel


def distribute_model(model, device, find_unused_paras=True):
    return DistributedDataParallel(
        model, device_ids=[device], find_unused_parameters=find_unused_paras  # expect: find-unused-true
    )


def wrap(model, device, find_unused=False):
    return DistributedDataParallel(model, device_ids=[device], find_unused_parameters=find_unused)


def main(model, head, loader, optimizer, device):
    model = distribute_model(model, device)
    head = wrap(head, device, find_unused=True)  # expect: find-unused-true
    for x in loader:
        loss = head(model(x)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
