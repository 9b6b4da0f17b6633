from accelerate import Accelerator

def train(args, model, opt, sched, loader):
    accelerator = Accelerator(gradient_accumulation_steps=args.grad_accum_steps)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(batch)
            accelerator.backward(loss)
            opt.step()
            sched.step()  # expect: scheduler-per-microstep
            opt.zero_grad()
