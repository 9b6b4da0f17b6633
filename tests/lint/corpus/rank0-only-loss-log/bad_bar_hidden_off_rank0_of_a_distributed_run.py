# Two tqdm bars hidden off rank 0: one bound in the loop header (`pbar := tqdm(...)`), one whose
# `disable` holds on every other rank of a distributed run (`ddp and rank != 0`). Each shows rank 0's
# own batch loss.
from tqdm import tqdm


def train(model, loader, optimizer, rank, epochs):
    for epoch in range(epochs):
        for step, batch in enumerate(pbar := tqdm(loader, disable=not rank == 0)):
            loss = model(**batch).loss
            pbar.set_postfix({"loss": loss.item()})  # expect: rank0-only-loss-log
            loss.backward()
            optimizer.step()


def train_ddp(model, loader, optimizer, rank, ddp):
    bar = tqdm(loader, disable=(ddp and rank != 0))
    for x, y in bar:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        bar.set_postfix({"loss": loss.item()})  # expect: rank0-only-loss-log
