from accelerate import Accelerator


def train(model, optimizer, loader, loss_fn, args):
    # accelerate divides the loss by its own gradient_accumulation_steps
    accelerator = Accelerator(gradient_accumulation_steps=args.accum_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, (x, y) in enumerate(loader):
        with accelerator.accumulate(model):
            loss = loss_fn(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
