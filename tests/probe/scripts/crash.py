"""A training loop that raises after two optimizer steps."""

import torch
from toy import FEATURES, make_model

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    loss = model(torch.ones(2, FEATURES)).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    if step == 1:
        raise RuntimeError("boom at step 1")
