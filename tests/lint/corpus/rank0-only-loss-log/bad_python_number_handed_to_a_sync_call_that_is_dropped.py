# ``sync_loss(avg_loss, device)`` all-reduces a tensor made from ``avg_loss`` and returns it, but
# the result is dropped: a Python number cannot be changed in place, so ``avg_loss`` stays this
# rank's own epoch mean when rank 0 prints it.
import torch
import torch.distributed as dist


def sync_loss(loss, device):
    t = torch.tensor([loss], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    return t[0]


def train(policy, dataloader, optimizer, device, rank, epochs):
    for epoch in range(epochs):
        num_steps = len(dataloader)
        avg_loss = 0
        for data in dataloader:
            loss = policy(data)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            avg_loss += loss.item()
        avg_loss = avg_loss / num_steps
        sync_loss(avg_loss, device)
        if rank == 0:
            print("Train loss: {:.6f}".format(avg_loss))  # expect: rank0-only-loss-log
