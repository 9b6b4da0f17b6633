from accelerate import Accelerator


def accum_log(log, new_logs):
    for key, new_value in new_logs.items():
        old_value = log.get(key, 0.0)
        log[key] = old_value + new_value
    return log


class Trainer:
    def __init__(self, model, optimizer, loader):
        self.accelerator = Accelerator()
        self.model, self.optimizer, self.loader = self.accelerator.prepare(model, optimizer, loader)

    def train_step(self):
        logs = {}
        loss = self.model(next(self.loader))
        self.accelerator.backward(loss)
        self.optimizer.step()
        self.optimizer.zero_grad()
        # the helper writes this rank's loss into the caller's dict
        accum_log(logs, {"loss": loss.item()})
        self.accelerator.print(f"loss: {logs['loss']}")  # expect: rank0-only-loss-log
