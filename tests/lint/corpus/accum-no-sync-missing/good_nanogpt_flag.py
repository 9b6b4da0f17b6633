from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, get_batch, optimizer, scaler, ctx, gradient_accumulation_steps, ddp):
    if ddp:
        model = DDP(model)
    while True:
        for micro_step in range(gradient_accumulation_steps):
            if ddp:
                model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)
            with ctx:
                logits, loss = model(*get_batch("train"))
                loss = loss / gradient_accumulation_steps
            scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
