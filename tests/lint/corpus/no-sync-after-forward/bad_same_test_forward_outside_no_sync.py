def train(model, loader, optimizer, accum, amp):
    for step, batch in enumerate(loader, 1):
        # both branches of the forward's test run it outside no_sync: the toggle comes too late
        if amp:
            loss = model(batch)
        else:
            loss = model(batch)
        loss = loss / accum
        if step % accum == 0:
            loss.backward()
        else:
            with model.no_sync():  # expect: no-sync-after-forward
                loss.backward()
        if step % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
