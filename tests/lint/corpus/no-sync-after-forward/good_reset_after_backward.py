def train(model, batches, optimizer, accum):
    for micro, batch in enumerate(batches):
        loss = model(batch).mean() / accum
        loss.backward()
        model.require_backward_grad_sync = micro + 1 == accum - 1
    optimizer.step()
    optimizer.zero_grad()
