from accelerate import Accelerator


def train(model, optimizer, loader):
    accelerator = Accelerator(gradient_accumulation_steps=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
