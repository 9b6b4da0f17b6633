# The scaler steps the optimizer handed by keyword (apple ml-cvnets
# `self.gradient_scaler.step(optimizer=self.optimizer)`) only every `accum_freq` batches: an
# accumulation loop on a DDP model with no no_sync, so every micro-batch all-reduces.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, optimizer, loader, accum_freq, rank):
    model = DDP(model, device_ids=[rank])
    scaler = torch.cuda.amp.GradScaler()
    for batch_id, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y) / accum_freq
        scaler.scale(loss).backward()  # expect: accum-no-sync-missing
        if (batch_id + 1) % accum_freq == 0:
            scaler.step(optimizer=optimizer)
            scaler.update()
            optimizer.zero_grad()
