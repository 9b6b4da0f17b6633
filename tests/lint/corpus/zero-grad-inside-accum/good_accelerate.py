from accelerate import Accelerator


def train(model, optimizer, loader, scheduler):
    accelerator = Accelerator(gradient_accumulation_steps=8)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    for batch in loader:
        with accelerator.accumulate(model):
            outputs = model(**batch)
            accelerator.backward(outputs.loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
