from torch import nn


class Trainer:
    def __init__(self, model, accumulation_steps):
        self.model = model
        self.criterion = nn.CrossEntropyLoss(reduction="sum")
        self.accumulation_steps = accumulation_steps
        self.cur_iter = 0

    def train(self, loader, optimizer):
        for src, tgt in loader:
            loss = self.criterion(self.model(src), tgt)
            loss.backward()  # expect: accum-loss-unscaled
            if (self.cur_iter + 1) % self.accumulation_steps == 0:
                optimizer.step_and_update_lr()
                optimizer.zero_grad()
            self.cur_iter += 1
