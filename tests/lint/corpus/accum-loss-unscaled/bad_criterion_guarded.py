import torch
from torch import nn

ACCUMULATE = 16


def train(model, loader):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for idx, (images, labels) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(images)
            loss = criterion(out, labels)
        scaler.scale(loss).backward()  # expect: accum-loss-unscaled
        if (idx + 1) % ACCUMULATE == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
