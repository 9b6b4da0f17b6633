# The backward runs only while a counter the loop advances is below a bound: how often it runs is
# not known statically, so the loop is not read as an accumulation loop.
from torch.nn.parallel import DistributedDataParallel as DDP


def train(module, loader, optimizer, accum, warm):
    model = DDP(module)
    seen = 0
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        seen += 1
        if seen > warm:
            loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
