from accelerate import Accelerator


def train(model, optimizer, lr_scheduler, train_dataloader):
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, lr_scheduler)
    for step, batch in enumerate(train_dataloader):
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
