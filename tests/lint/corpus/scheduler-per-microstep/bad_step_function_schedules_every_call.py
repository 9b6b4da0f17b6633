# The schedule advances on every call of the step function, the optimizer every `accum` calls.
import torch


class Trainer:
    def __init__(self, model, accum):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 100)
        self.accum = accum
        self.step_count = 0

    def train_step(self, batch):
        loss = self.model(batch).mean() / self.accum
        loss.backward()
        self.step_count += 1
        if self.step_count % self.accum == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
        self.scheduler.step()  # expect: scheduler-per-microstep
