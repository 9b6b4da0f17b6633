import torch.distributed.fsdp.fully_sharded_data_parallel as fsdp_mod
import torch.nn as nn


def step(net, opt):
    sharded = fsdp_mod.FullyShardedDataParallel(net)
    nn.utils.clip_grad_norm_(sharded.parameters(), max_norm=2.0)  # expect: fsdp-clip-wrong
    opt.step()
