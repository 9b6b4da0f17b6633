import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy


def wrap_and_clip(model):
    model = FSDP(model, sharding_strategy=ShardingStrategy.NO_SHARD)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
