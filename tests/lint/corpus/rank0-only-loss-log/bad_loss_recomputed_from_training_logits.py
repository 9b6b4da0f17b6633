# VAR: the loss that is backpropagated is computed from the training logits; per-resolution losses
# recomputed from the same logits (a loop over resolutions, not over data) are logged on rank 0.
# Accuracies from the same logits are not losses.
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, begin_ends, writer):
        self.model = DDP(model)
        self.train_loss = nn.CrossEntropyLoss(label_smoothing=0.1, reduction="none")
        self.val_loss = nn.CrossEntropyLoss(reduction="mean")
        self.begin_ends = begin_ends
        self.writer = writer

    def train_step(self, x, gt, optimizer, step):
        logits = self.model(x)
        V = logits.shape[-1]
        loss = self.train_loss(logits.view(-1, V), gt.view(-1)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            kw = {}
            for si, (bg, ed) in enumerate(self.begin_ends):
                pred, tar = logits.data[:, bg:ed].reshape(-1, V), gt[:, bg:ed].reshape(-1)
                acc = (pred.argmax(dim=-1) == tar).float().mean().item()
                self.writer.add_scalar(f"acc_{si}", acc, step)
                ce = self.val_loss(pred, tar).item()
                kw[f"L_{si}"] = ce
            self.writer.add_scalars("AR_iter_loss", kw, step)  # expect: rank0-only-loss-log
