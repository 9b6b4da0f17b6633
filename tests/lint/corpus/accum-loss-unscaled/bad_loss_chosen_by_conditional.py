# PointNeXt: the loss is one of two criterion calls (`criterion(logits, y) if ... else
# criterion(logits, y, mask)`), backpropagated undivided while the optimizer steps only when
# `num_iter == step_per_update`.
import torch


def train_one_epoch(model, optimizer, loader, criterion, cfg):
    num_iter = 0
    for idx, data in enumerate(loader):
        num_iter += 1
        logits = model(data)
        loss = criterion(logits, data["y"]) if "mask" not in cfg.name else criterion(logits, data["y"], data["mask"])
        loss.backward()  # expect: accum-loss-unscaled
        if num_iter == cfg.step_per_update:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
            optimizer.step()
            optimizer.zero_grad()
            num_iter = 0
