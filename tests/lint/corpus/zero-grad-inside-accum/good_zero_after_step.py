import torch


def train(model, loader, accum_steps):
    optimizer = torch.optim.AdamW(model.parameters())
    it = iter(loader)
    for step in range(10):
        for _ in range(accum_steps):
            x, y = next(it)
            loss = torch.nn.functional.mse_loss(model(x), y) / accum_steps
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
