import torch

def train(model, loader, opt, sched, accum):
    model = torch.nn.parallel.DistributedDataParallel(model)
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()  # expect: accum-no-sync-missing
        last = (i + 1) % accum == 0
        if last:
            opt.step()
            opt.zero_grad()
        sched.step()  # expect: scheduler-per-microstep
