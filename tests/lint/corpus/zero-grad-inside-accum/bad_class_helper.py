from torch import nn


class Trainer:
    def __init__(self, model, optim, accumulation):
        self.model = model
        self.optim = optim
        self.accumulation = accumulation
        self.criterion = nn.CrossEntropyLoss()

    def micro_step(self, batch):
        self.optim.zero_grad()  # expect: zero-grad-inside-accum
        loss = self.criterion(self.model(batch["x"]), batch["y"])
        (loss / self.accumulation).backward()

    def step(self, micro_batches):
        for batch in micro_batches:
            self.micro_step(batch)
        self.optim.step()
