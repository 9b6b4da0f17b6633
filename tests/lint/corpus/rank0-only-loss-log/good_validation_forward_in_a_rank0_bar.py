# The validation loop's bar (hidden off rank 0) shows a loss its own no-grad forward computed: a
# validation value, though it reuses the name `loss`.
import torch
from tqdm import tqdm


def run(model, train_loader, loader, optimizer, rank):
    for batch in train_loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
    model.eval()
    pbar = tqdm(loader, disable=rank != 0)
    for batch in pbar:
        with torch.no_grad():
            loss = model(**batch).loss
            pbar.set_postfix({"loss": loss.item()})
