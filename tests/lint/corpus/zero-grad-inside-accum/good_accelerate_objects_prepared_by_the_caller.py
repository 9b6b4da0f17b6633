# titok style: the training function receives the optimizer and scheduler that the entry script
# passed through `accelerator.prepare`; this file prepares nothing, so it cannot tell they were not
# prepared, and accelerate gates the prepared ones inside `accumulate()` (several modules too).
def train_one_epoch(accelerator, model, loss_module, optimizer, lr_scheduler, loader):
    for images in loader:
        with accelerator.accumulate([model, loss_module]):
            loss, logs = loss_module(images, model(images))
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad(set_to_none=True)
