import torch


def train(model, batches, accum):
    opt = torch.optim.AdamW(model.parameters())
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for step in range(100):
        for micro in range(accum):
            loss = model(batches[micro]).mean() / accum
            loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
