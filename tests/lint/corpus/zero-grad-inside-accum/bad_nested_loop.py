import torch


def train(model, loader, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = iter(loader)
    for step in range(100):
        for micro in range(accum_steps):
            x, y = next(batches)
            optimizer.zero_grad()  # expect: zero-grad-inside-accum
            loss = torch.nn.functional.mse_loss(model(x), y) / accum_steps
            loss.backward()
        optimizer.step()
