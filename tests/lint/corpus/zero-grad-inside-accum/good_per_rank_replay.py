import torch.nn.functional as F


def replay(model, dataset, optimizer, world, accum):
    # One process simulates `world` ranks: zero, accumulate, keep a copy of each rank's gradient.
    params = list(model.parameters())
    grads = []
    for r in range(world):
        model.zero_grad(set_to_none=True)
        for m in range(accum):
            x, y = dataset[r * accum + m]
            loss = F.mse_loss(model(x), y) / accum
            loss.backward()
        grads.append([p.grad.clone() for p in params])
    for p, *per_rank in zip(params, *grads):
        p.grad = sum(per_rank) / world
    optimizer.step()
