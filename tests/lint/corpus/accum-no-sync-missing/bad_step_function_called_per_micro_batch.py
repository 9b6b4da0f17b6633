# NVIDIA-ConvNets / nerfstudio style: the trainer's step method is one micro-step; it backprops on
# every call and steps only when the micro-step counter reaches the accumulation count. The DDP
# model all-reduces on every call.
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, optimizer, accum_steps):
        self.model = DDP(model)
        self.optimizer = optimizer
        self.accum_steps = accum_steps
        self.micro = 0

    def train_step(self, batch):
        loss = self.model(batch).mean() / self.accum_steps
        loss.backward()  # expect: accum-no-sync-missing
        self.micro += 1
        if self.micro % self.accum_steps == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
