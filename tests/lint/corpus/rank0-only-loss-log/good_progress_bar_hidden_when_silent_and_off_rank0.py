# ``disable=(args.quiet and local_rank != 0)`` hides the bar off rank 0 only when the user asks
# for quiet: by default every rank shows its own bar, so nothing here is rank 0's alone.
from tqdm import tqdm


def train_epoch(model, loader, optimizer, local_rank, args):
    progress = tqdm(loader, disable=(args.quiet and local_rank != 0))
    for batch in progress:
        loss = model(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        progress.set_postfix({"loss": f"{loss.item():.4f}"})
