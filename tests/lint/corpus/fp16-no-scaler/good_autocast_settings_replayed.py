# Activation checkpointing replays the forward's autocast settings in backward:
# ``autocast(**ctx.gpu_autocast_kwargs)`` holds whatever dtype/enabled the forward ran with, so it
# says nothing about float16.
import torch


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, *args):
        ctx.run_function = run_function
        ctx.gpu_autocast_kwargs = {"enabled": torch.is_autocast_enabled(), "dtype": torch.get_autocast_gpu_dtype()}
        ctx.save_for_backward(*args)
        with torch.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = [x.detach().requires_grad_(True) for x in ctx.saved_tensors]
        with torch.enable_grad(), torch.cuda.amp.autocast(**ctx.gpu_autocast_kwargs):
            outputs = ctx.run_function(*inputs)
        return (None, *torch.autograd.grad(outputs, inputs, grads))


def train(model, loader, optimizer):
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
