import torch.utils.data as tud
from torch.distributed.fsdp import fully_shard


def make_loader(ds):
    return tud.DataLoader(ds, batch_size=8, num_workers=2)  # expect: sampler-missing


def train(model, ds, opt):
    fully_shard(model)
    train_loader = make_loader(ds)
    for epoch in range(3):
        for batch in train_loader:
            model(batch).mean().backward()
            opt.step()
            opt.zero_grad()
