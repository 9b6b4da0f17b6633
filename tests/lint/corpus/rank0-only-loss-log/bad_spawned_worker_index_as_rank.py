# The worker ``mp.spawn`` runs gets the process index first, whatever it is called (here
# ``worker_idx``, also handed to ``init_process_group(rank=...)``): ``worker_idx == 0`` is rank 0.
# The flag made of it is handed to the epoch function, whose progress bar shows this rank's meter
# through a manager built around it.
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm


class MetricCollector:
    def __init__(self, name):
        self.name = name
        self.val = 0.0

    def update(self, v):
        self.val = v

    def summary(self):
        return f"{self.name} {self.val:.3f}"


class MetricManager:
    def __init__(self, metrics):
        self.metrics = metrics

    def summary_all(self):
        return "  ".join(x.summary() for x in self.metrics)


def train_epoch(loader, model, optimizer, verbose=False):
    loss_cur = MetricCollector("loss")
    manager = MetricManager([loss_cur])
    iterx = tqdm(loader) if verbose else loader
    for data in iterx:
        loss = model(data)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss_cur.update(loss.item())
        if verbose:
            iterx.set_postfix_str(manager.summary_all())  # expect: rank0-only-loss-log
    return manager


def main_worker(worker_idx, world_size, loader, model, optimizer):
    dist.init_process_group("nccl", world_size=world_size, rank=worker_idx)
    model = DDP(model, device_ids=[worker_idx])
    verbose = worker_idx == 0
    for epoch in range(10):
        train_epoch(loader, model, optimizer, verbose=verbose)
        if worker_idx == 0:
            print(f"epoch {epoch} done")


def main(world_size, loader, model, optimizer):
    mp.spawn(main_worker, nprocs=world_size, args=(world_size, loader, model, optimizer))
