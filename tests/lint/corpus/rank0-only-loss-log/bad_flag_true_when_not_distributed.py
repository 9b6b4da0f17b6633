# neuraloperator `setup` style: the logging flag is a rank-0 test when distributed and `True` in the
# other branch (a single process logs its own loss): the flag is rank 0's whenever ranks exist.
import torch
import torch.distributed as dist


def train(model, loader, optimizer, distributed):
    if distributed:
        dist.init_process_group("nccl")
        model = torch.nn.parallel.DistributedDataParallel(model)
        is_logger = dist.get_rank() == 0
    else:
        is_logger = True
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        optimizer.step()
        if is_logger:
            print(loss.item())  # expect: rank0-only-loss-log
