# The branch that skips the gather picks a loss item: its value is this rank's loss.
from accelerate import Accelerator


def train(model, loss_module, optimizer, loader):
    accelerator = Accelerator()
    model, optimizer = accelerator.prepare(model, optimizer)
    for images in loader:
        loss, loss_dict = loss_module(images, model(images))
        logs = {}
        for k, v in loss_dict.items():
            if k in ["d_weight", "recon_loss"]:
                logs["train/" + k] = v.cpu().item()
            else:
                logs["train/" + k] = accelerator.gather(v).mean().item()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        if accelerator.is_main_process:
            accelerator.log(logs)  # expect: rank0-only-loss-log
