"""A non-distributed loop of STEPS small SGD steps; prints a digest of the final state_dict."""

import hashlib
import os

import torch
from toy import FEATURES, make_model

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(4, FEATURES, generator=torch.Generator().manual_seed(0))
for step in range(int(os.environ.get("STEPS", "200"))):
    loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
digest = hashlib.sha256(b"".join(v.numpy().tobytes() for v in model.state_dict().values())).hexdigest()
print(f"digest {digest}")
