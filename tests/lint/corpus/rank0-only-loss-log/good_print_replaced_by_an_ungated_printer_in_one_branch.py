# The printer is gated on its `enabled` parameter, but it is handed `True` on a distributed run too
# (`print_on_master_only(True)` before an optional rank-0 narrowing is not a single-process branch
# when both run after `init_process_group`): every rank prints its own loss, nothing is hidden.
import torch


def print_on_master_only(enabled):
    import builtins as __builtin__

    builtin_print = __builtin__.print

    def print(*args, **kwargs):
        if enabled:
            builtin_print(*args, **kwargs)

    __builtin__.print = print


def train(model, dl, optimizer, verbose_all):
    torch.distributed.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    print_on_master_only(True)
    if not verbose_all:
        print_on_master_only(torch.distributed.get_rank() == 0)
    for data in dl:
        loss = model(data).mean()
        loss.backward()
        optimizer.step()
        print(loss.item())
