from accelerate import Accelerator


class Trainer:
    def __init__(self, model, optimizer, loader):
        self.accelerator = Accelerator()
        self.model, self.optimizer, self.loader = self.accelerator.prepare(model, optimizer, loader)

    def print(self, msg):
        return self.accelerator.print(msg)

    def train_step(self, batch):
        loss = self.model(batch).mean()
        self.accelerator.backward(loss)
        self.optimizer.step()
        self.optimizer.zero_grad()
        mean_loss = self.accelerator.reduce(loss.detach(), reduction="mean")
        self.print(f"loss: {mean_loss.item():.3f}")
