# The training step runs in bfloat16; float16 autocast appears only where no gradient is computed:
# an evaluation method (named for it) and a ``torch.no_grad()`` block. Nothing trains in float16.
import torch


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def train_batch(self, batch):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()

    def eval_batch(self, batch):
        with torch.autocast("cuda", dtype=torch.float16):
            return self.model(batch).mean()

    def sample(self, batch):
        with torch.no_grad():
            with torch.autocast("cuda", dtype=torch.float16):
                return self.model(batch)
