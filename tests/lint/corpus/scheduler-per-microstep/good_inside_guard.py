def train(model, loader, optimizer, scheduler, accumulation_steps):
    for i, batch in enumerate(loader):
        loss = model(**batch).loss / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
