# Only the evaluation copy is FSDP-wrapped; the epoch method that clips is handed the plain model.
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Trainer:
    def fit(self, model, epochs):
        eval_model = FSDP(model)
        self.optimizer = torch.optim.Adam(model.parameters())
        for epoch in range(epochs):
            self.train_epoch(model, epoch)
            self.evaluate(eval_model)

    def train_epoch(self, model, epoch):
        for batch in self.loader:
            loss = model(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            self.optimizer.step()
            self.optimizer.zero_grad()

    def evaluate(self, model):
        with torch.no_grad():
            return model(self.batch)
