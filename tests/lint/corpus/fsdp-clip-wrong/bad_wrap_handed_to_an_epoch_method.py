# The FSDP1 model is handed to the epoch method: its `model.parameters()` are this rank's shards.
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Trainer:
    def fit(self, model, epochs):
        dist_model = FSDP(model)
        self.optimizer = torch.optim.Adam(dist_model.parameters())
        for epoch in range(epochs):
            self.train_epoch(dist_model, epoch)

    def train_epoch(self, model, epoch):
        for batch in self.loader:
            loss = model(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: fsdp-clip-wrong
            self.optimizer.step()
            self.optimizer.zero_grad()
