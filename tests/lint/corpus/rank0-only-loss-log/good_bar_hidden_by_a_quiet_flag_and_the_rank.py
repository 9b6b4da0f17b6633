# `disable=(quiet and rank != 0)`: the other operand is a user's choice, not whether the run is
# distributed, so without --quiet every rank shows its own bar.
from tqdm import tqdm


def train(model, loader, optimizer, rank, quiet):
    bar = tqdm(loader, disable=(quiet and rank != 0))
    for x, y in bar:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        bar.set_postfix({"loss": loss.item()})
