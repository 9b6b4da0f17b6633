import numpy as np
import torch
from accelerate import Accelerator


def train(model, loader, optimizer, epochs):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        train_loss = []
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            every_rank = accelerator.gather(loss.detach())
            train_loss.append(every_rank.mean().item())
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        train_loss = np.average(train_loss)
        accelerator.print(f"Epoch {epoch} | Train Loss: {train_loss:.7f}")
