# Latte-style: the schedule's lengths are multiplied by the loop's accumulation count when it is
# built, so stepping it on every micro-batch keeps the schedule the author meant.
from diffusers.optimization import get_scheduler


def train(model, loader, opt, args):
    lr_scheduler = get_scheduler(
        name="cosine",
        optimizer=opt,
        num_warmup_steps=args.lr_warmup_steps * args.gradient_accumulation_steps,
        num_training_steps=args.max_train_steps * args.gradient_accumulation_steps,
    )
    train_steps = 0
    for x, y in loader:
        loss = model(x, y) / args.gradient_accumulation_steps
        loss.backward()
        lr_scheduler.step()
        if train_steps % args.gradient_accumulation_steps == 0:
            opt.step()
            opt.zero_grad()
        train_steps += 1
