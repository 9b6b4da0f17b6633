def train(model, batches, optimizer, accum):
    for micro, batch in enumerate(batches):
        loss = model(batch).mean() / accum
        model.require_backward_grad_sync = micro == accum - 1  # expect: no-sync-after-forward
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()
