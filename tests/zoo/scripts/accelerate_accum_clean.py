# zoo: expect=none
# accelerate with gradient accumulation handled by accelerator.accumulate(); the printed loss is
# gathered from every process first.
import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset


def main():
    accelerator = Accelerator(gradient_accumulation_steps=2, cpu=True)
    set_seed(0)
    x = torch.randn(512, 10)
    y = (x @ torch.randn(10, 1)).squeeze(1) + 0.1 * torch.randn(512)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(1):
        model.train()
        for step, (inputs, targets) in enumerate(loader):
            with accelerator.accumulate(model):
                preds = model(inputs).squeeze(1)
                loss = nn.functional.mse_loss(preds, targets)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            if step % 4 == 3:
                mean_loss = accelerator.gather(loss.detach()).mean()
                accelerator.print(f"epoch {epoch} step {step} loss {mean_loss.item():.4f}")
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    main()
