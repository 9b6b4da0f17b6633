# The same handed-in objects, but the model's zero_grad: accelerate never gates a model's
# zero_grad, wherever the model was prepared.
def train_one_epoch(accelerator, model, optimizer, loader):
    for images in loader:
        with accelerator.accumulate(model):
            loss = model(images).mean()
            accelerator.backward(loss)
            optimizer.step()
            model.zero_grad()  # expect: zero-grad-inside-accum
