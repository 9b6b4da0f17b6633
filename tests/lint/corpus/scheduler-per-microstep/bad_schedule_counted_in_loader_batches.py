# The schedule is counted in loader batches (micro-batches), not multiplied by the accumulation
# count: the lr still changes between the micro-steps of one update.
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
            scheduler.step()  # expect: scheduler-per-microstep
