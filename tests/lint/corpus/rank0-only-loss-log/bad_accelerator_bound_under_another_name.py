from accelerate import Accelerator


def train(model, loader, optimizer):
    # what the name is bound to decides: accelerate's Accelerator.print prints on the main process only
    acc = Accelerator()
    model, optimizer, loader = acc.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        acc.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        acc.print(f"loss {loss.item():.4f}")  # expect: rank0-only-loss-log
