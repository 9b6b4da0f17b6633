# YOLOv6 style: the per-batch method backprops on every call and hands the step to a helper that
# steps only once the counter has advanced by `accumulate` calls since the last step. The DDP model
# all-reduces on every call.
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, optimizer, scaler, batch_size):
        self.model = DDP(model)
        self.optimizer = optimizer
        self.scaler = scaler
        self.batch_size = batch_size
        self.last_opt_step = 0
        self.step = 0
        self.accumulate = max(1, round(64 / batch_size))

    def train_in_steps(self, batch):
        loss = self.model(batch).mean() / self.accumulate
        self.scaler.scale(loss).backward()  # expect: accum-no-sync-missing
        self.update_optimizer()

    def update_optimizer(self):
        self.accumulate = max(1, round(64 / self.batch_size))
        if self.step - self.last_opt_step >= self.accumulate:
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad()
            self.last_opt_step = self.step

    def train_one_epoch(self, loader):
        for self.step, batch in enumerate(loader):
            self.train_in_steps(batch)
