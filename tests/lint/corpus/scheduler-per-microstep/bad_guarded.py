import torch.nn.functional as F
from transformers import get_linear_schedule_with_warmup


def train(model, loader, optimizer, args):
    lr_sched = get_linear_schedule_with_warmup(optimizer, 100, 1000)
    for step, (x, y) in enumerate(loader):
        loss = F.nll_loss(model(x), y) / args.gradient_accumulation_steps
        loss.backward()
        lr_sched.step()  # expect: scheduler-per-microstep
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
