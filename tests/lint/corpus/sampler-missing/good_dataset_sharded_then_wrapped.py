# The dataset is sharded by rank several assignments before the loader (HF `datasets.shard`), then
# wrapped: each rank already reads its own part, so no DistributedSampler is needed.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def main(model, raw, Wrapper, Packer):
    model = DDP(model)
    optimizer = torch.optim.AdamW(model.parameters())
    ds = raw.shuffle(seed=0)
    ds = ds.shard(num_shards=dist.get_world_size(), index=dist.get_rank())
    ds = ds.select(range(100, len(ds)))
    train_dataset = Wrapper(ds, max_len=512)
    train_dataset = Packer(train_dataset, seq_length=1024)
    loader = DataLoader(train_dataset, batch_size=8, shuffle=False)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
