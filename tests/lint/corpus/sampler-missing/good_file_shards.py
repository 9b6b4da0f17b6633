import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def main(model, ShardedFiles, files, opt):
    model = DDP(model)
    shard = ShardedFiles(files[dist.get_rank()::dist.get_world_size()])
    loader = DataLoader(shard, batch_size=16)
    for batch in loader:
        model(batch).mean().backward()
        opt.step()
        opt.zero_grad()
