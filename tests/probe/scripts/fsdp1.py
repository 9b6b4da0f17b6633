"""FSDP1 (`FullyShardedDataParallel`) on gloo CPU with accumulation through `no_sync()`.

argv: STRATEGY (FULL_SHARD | HYBRID_SHARD | NO_SHARD), CLIP (none | method | torch), [params.pt].
HYBRID_SHARD uses a (replicate=world/2, shard=2) device mesh: HSDP on four ranks. CLIP=torch is the
FSDP1 pitfall: torch.nn.utils.clip_grad_norm_ on sharded parameters (each rank sees its shard).
"""

import contextlib
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
from torch.utils.data import DataLoader, DistributedSampler
from toy import ACCUM, BATCH, EPOCHS, LR, make_dataset, make_model

strategy, clip = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
kwargs = {}
if strategy == "HYBRID_SHARD":
    world = (
        dist.get_world_size()
    )  # 4 ranks: 2 replicas × 2 shards (with 2 ranks FSDP1 falls back to NO_SHARD)
    kwargs["device_mesh"] = init_device_mesh("cpu", (world // 2, 2) if world >= 4 else (world, 1))
model = FSDP(
    make_model(), sharding_strategy=ShardingStrategy[strategy], device_id=torch.device("cpu"), **kwargs
)
dataset = make_dataset()
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)
optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)

for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        last = (i + 1) % ACCUM == 0
        with contextlib.nullcontext() if last else model.no_sync():
            loss = F.mse_loss(model(x), y) / ACCUM
            loss.backward()
        if last:
            if clip == "method":
                model.clip_grad_norm_(0.5)
            elif clip == "torch":
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            optimizer.zero_grad()

with FSDP.summon_full_params(model):
    full = {name: p.detach().clone() for name, p in model.named_parameters()}
if dist.get_rank() == 0 and len(sys.argv) > 3:
    torch.save(full, sys.argv[3])
dist.destroy_process_group()
