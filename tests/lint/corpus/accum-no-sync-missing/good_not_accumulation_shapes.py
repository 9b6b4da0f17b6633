# Three loops that are not DDP accumulation without sync control:
# - a backward-only loop (its optimizer runs in a DDP hook) followed by another model's training
#   loop: the step inside that later loop is not this loop's step (torch's DDP tests);
# - an accumulation count that is 1 on every path but DeepSpeed's (the engine accumulates itself);
# - micro-steps whose forward ran under no_sync, with the last backward under
#   accelerate's `trigger_sync_in_backward`.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def hook_test(model_with_hook, model_no_hook, optimizer_no_hook, inp):
    model_with_hook = DDP(model_with_hook)
    for _ in range(6):
        model_with_hook.zero_grad()
        loss = model_with_hook(inp).sum()
        loss.backward()
    torch.distributed.barrier()
    for _ in range(6):
        model_no_hook.zero_grad()
        loss = model_no_hook(inp).sum()
        loss.backward()
        optimizer_no_hook.step()


def deepspeed_only(accelerator, model, loader, optimizer, DistributedType):
    model, optimizer = accelerator.prepare(model, optimizer)
    if accelerator.distributed_type == DistributedType.DEEPSPEED:
        gradient_accumulation_steps = accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]
    else:
        gradient_accumulation_steps = 1
    for step, batch in enumerate(loader):
        loss = model(**batch).loss / gradient_accumulation_steps
        accelerator.backward(loss)
        if step % gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def forced_last_sync(accelerator, ddp_model, losses, optimizer, n):
    ddp_model = accelerator.prepare(ddp_model)
    for i in range(n):
        if i < n - 1:
            accelerator.backward(losses[i])
        else:
            with accelerator.trigger_sync_in_backward(ddp_model):
                accelerator.backward(losses[i])
    optimizer.step()
