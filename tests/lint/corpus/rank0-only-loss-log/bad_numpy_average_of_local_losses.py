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
            train_loss.append(loss.item())
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        # numpy's weighted mean of this process's values, combined across no ranks
        train_loss = np.average(train_loss)
        accelerator.print(f"Epoch {epoch} | Train Loss: {train_loss:.7f}")  # expect: rank0-only-loss-log
