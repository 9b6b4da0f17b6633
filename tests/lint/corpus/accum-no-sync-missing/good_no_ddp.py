import torch


def train(model, batches, accum):
    optimizer = torch.optim.AdamW(model.parameters())
    for micro in range(accum):
        loss = model(batches[micro]).mean() / accum
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()
