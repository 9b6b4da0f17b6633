# ml-cvnets: the criterion object is called `criteria` and its output is bound with an annotation
# (`out: Union[Dict, Tensor] = self.criteria(...)`); the loss reaches backward undivided while the
# optimizer steps every `accum_freq` batches.
from typing import Dict, Union

from torch import Tensor


class Trainer:
    def __init__(self, model, criteria, optimizer, scaler, accum_freq):
        self.model, self.criteria, self.optimizer = model, criteria, optimizer
        self.gradient_scaler, self.accum_freq = scaler, accum_freq

    def train_epoch(self, loader):
        for batch_id, (x, y) in enumerate(loader):
            out: Union[Dict, Tensor] = self.criteria(self.model(x), y)
            loss = out["total_loss"] if isinstance(out, Dict) else out
            self.gradient_scaler.scale(loss).backward()  # expect: accum-loss-unscaled
            if (batch_id + 1) % self.accum_freq == 0:
                self.gradient_scaler.step(optimizer=self.optimizer)
                self.gradient_scaler.update()
                self.optimizer.zero_grad()
