# A class that keeps what it is handed in an attribute none of its log calls write (an early
# stopper's best loss, printed nowhere) logs nothing of it; the accumulating logger of
# bad_logger_class_accumulates_then_writes.py fed an all-reduced loss logs the global value.
import torch
import torch.distributed as dist


class EarlyStopper:
    def __init__(self, patience=5):
        self.best = float("inf")
        self.bad_steps = 0
        self.patience = patience

    def report(self):
        print(f"patience {self.patience}, {self.bad_steps} steps without progress")

    def step(self, loss):
        if loss < self.best:
            self.best, self.bad_steps = loss, 0
        else:
            self.bad_steps += 1
        return self.bad_steps > self.patience


class Logger:
    def __init__(self, writer):
        self.running = {}
        self.writer = writer
        self.steps = 0

    def flush(self):
        for k in self.running:
            self.writer.add_scalar(k, self.running[k] / self.steps, self.steps)
        self.running, self.steps = {}, 0

    def push(self, metrics):
        self.steps += 1
        for key in metrics:
            self.running[key] = self.running.get(key, 0.0) + metrics[key]


def train(args, model, loader, optimizer, writer):
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(model)
    stopper = EarlyStopper()
    logger = Logger(writer)
    for img, target in loader:
        loss = torch.nn.functional.l1_loss(model(img), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        if args.local_rank == 0:
            stopper.step(loss.item())
            logger.push({"loss": reduced.item() / dist.get_world_size()})
            logger.flush()
