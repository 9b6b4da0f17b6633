import torch.nn.functional as F


def train(ddp_model, inputs, targets, optimizer, accum_steps):
    for i in range(accum_steps):
        if i < accum_steps - 1:
            with ddp_model.no_sync():
                loss = F.cross_entropy(ddp_model(inputs[i]), targets[i]) / accum_steps
                loss.backward()
        else:
            loss = F.cross_entropy(ddp_model(inputs[i]), targets[i]) / accum_steps
            loss.backward()
    optimizer.step()
    optimizer.zero_grad()
