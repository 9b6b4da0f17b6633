"""accelerate: `Accelerator(gradient_accumulation_steps=2)` with `accumulate()` (run by torchrun)."""

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader
from toy import ACCUM, BATCH, EPOCHS, make_dataset, make_model

accelerator = Accelerator(gradient_accumulation_steps=ACCUM, cpu=True)
model = make_model()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0, end_factor=0.5, total_iters=8)
loader = DataLoader(make_dataset(), batch_size=BATCH, shuffle=True)
model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

for epoch in range(EPOCHS):
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = F.mse_loss(model(x), y)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
accelerator.end_training()
