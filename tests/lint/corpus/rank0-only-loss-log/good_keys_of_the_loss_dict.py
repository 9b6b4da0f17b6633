# The names of the logged quantities (the keys of the loss dict) are not loss values: rank 0 lists
# which ones it will report, and the values it reports are all-reduced first.
import torch.distributed as dist


def train(model, loader, optimizer):
    for batch in loader:
        losses = model(batch)
        loss = sum(losses.values())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if dist.get_rank() == 0:
            print("reporting", list(losses.keys()))
            names = {key: len(key) for key in losses.keys()}
            print(names)
