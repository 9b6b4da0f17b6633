# The bar is hidden when the user asks for silence *or* on any rank but 0
# (``disable=(args.silent or local_rank != 0)``): whatever the flag, only rank 0 ever shows it,
# so its postfix is rank 0's own batch loss.
from tqdm import tqdm


def train_epoch(model, loader, optimizer, scaler, local_rank, args):
    progress = tqdm(enumerate(loader), total=len(loader), disable=(args.silent or local_rank != 0))
    for i, batch in progress:
        loss = model(batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        progress.set_postfix({"loss": f"{loss.item():.4f}"})  # expect: rank0-only-loss-log
