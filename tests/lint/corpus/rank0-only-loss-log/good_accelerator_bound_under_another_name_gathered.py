from accelerate import Accelerator


def train(model, loader, optimizer):
    acc = Accelerator()
    model, optimizer, loader = acc.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        acc.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        avg = acc.gather(loss.detach()).mean()
        acc.print(f"loss {avg.item():.4f}")
