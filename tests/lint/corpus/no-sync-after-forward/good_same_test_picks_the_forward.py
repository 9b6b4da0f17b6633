def train(model, loader, optimizer, accum):
    for step, batch in enumerate(loader, 1):
        # the same test picks a forward with sync and one under no_sync, then the matching backward
        if step % accum == 0:
            loss = model(batch)
        else:
            with model.no_sync():
                loss = model(batch)
        loss = loss / accum
        if step % accum == 0:
            loss.backward()
        else:
            with model.no_sync():
                loss.backward()
        if step % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
