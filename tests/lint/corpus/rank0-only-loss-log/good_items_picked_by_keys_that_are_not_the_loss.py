# titok style: every loss item is gathered before the log; only the items whose keys say they are
# not the loss (a factor, a weight, logits) are logged as this rank's values.
from accelerate import Accelerator


def train(model, loss_module, optimizer, loader):
    accelerator = Accelerator()
    model, optimizer = accelerator.prepare(model, optimizer)
    for images in loader:
        loss, loss_dict = loss_module(images, model(images))
        logs = {}
        for k, v in loss_dict.items():
            if k in ["discriminator_factor", "d_weight", "logits_real"]:
                logs["train/" + k] = v.cpu().item()
            else:
                logs["train/" + k] = accelerator.gather(v).mean().item()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        if accelerator.is_main_process:
            out = {"lr": 0.1}
            out.update(logs)
            accelerator.log(out)
