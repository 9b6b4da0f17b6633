# Either criterion call, then divided by the update count before backward: the gradient is the
# mean over the micro-steps.
def train_one_epoch(model, optimizer, loader, criterion, cfg):
    num_iter = 0
    for idx, data in enumerate(loader):
        num_iter += 1
        logits = model(data)
        loss = criterion(logits, data["y"]) if cfg.plain else criterion(logits, data["y"], data["mask"])
        (loss / cfg.step_per_update).backward()
        if num_iter == cfg.step_per_update:
            optimizer.step()
            optimizer.zero_grad()
            num_iter = 0
