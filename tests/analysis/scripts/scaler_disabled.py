"""nanoGPT's idiom for fp32/bf16: a GradScaler that is switched off, used as if it were on."""

import torch
import torch.nn.functional as F

dtype = "bfloat16"
torch.manual_seed(0)
model = torch.nn.Linear(4, 3)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", enabled=(dtype == "float16"))
for step in range(3):
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
