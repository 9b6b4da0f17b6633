from accelerate import Accelerator


class Trainer:
    def __init__(self, model, optimizer, loader):
        self.accelerator = Accelerator()
        self.model, self.optimizer, self.loader = self.accelerator.prepare(model, optimizer, loader)

    def print(self, msg):
        # the wrapper is the log call of its callers: accelerator.print runs on the main process only
        return self.accelerator.print(msg)

    def train_step(self, batch):
        loss = self.model(batch).mean()
        self.accelerator.backward(loss)
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.print(f"loss: {loss.item():.3f}")  # expect: rank0-only-loss-log
