import torch
from torch.utils.data import DataLoader, WeightedRandomSampler
from torch.nn.parallel import DistributedDataParallel as DDP

def main(ds, weights, model, opt):
    torch.distributed.init_process_group("nccl")
    model = DDP(model)
    loader = DataLoader(ds, sampler=WeightedRandomSampler(weights, len(ds)), batch_size=8)  # expect: sampler-missing
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        opt.step()
