from torch import nn


class Trainer:
    def __init__(self, model, accumulation_steps):
        self.model = model
        self.criterion = nn.CrossEntropyLoss()
        self.accumulation_steps = accumulation_steps

    def train(self, loader, optimizer):
        for step, (src, tgt) in enumerate(loader):
            loss = self.criterion(self.model(src), tgt) / self.accumulation_steps
            loss.backward()
            if (step + 1) % self.accumulation_steps == 0:
                optimizer.step_and_update_lr()
                optimizer.zero_grad()
