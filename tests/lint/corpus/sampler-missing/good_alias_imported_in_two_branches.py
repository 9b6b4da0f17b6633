# One alias, two modules, two branches: the sampler class is a runtime choice.
import torch

try:
    from apex.parallel import DistributedDataParallel as DDP
except ImportError:
    from torch.nn.parallel import DistributedDataParallel as DDP

DISTRIBUTED = torch.cuda.device_count() > 1
if DISTRIBUTED:
    from torch.utils.data.distributed import DistributedSampler as Sampler
else:
    from torch.utils.data import RandomSampler as Sampler
from torch.utils.data import DataLoader


def train(dataset, model, optimizer):
    model = DDP(model)
    loader = DataLoader(dataset, batch_size=8, sampler=Sampler(dataset))
    for x, y in loader:
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
