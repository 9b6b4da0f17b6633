# ``F.log_softmax(...)`` under a rank-0 test is math on a module, not a log method of a logger;
# what is printed is the all-reduced loss.
import torch.distributed as dist
import torch.nn.functional as F


def train(net, loader, optimizer, world_size):
    for step, (data, target) in enumerate(loader):
        logits = net(data)
        loss = F.nll_loss(F.log_softmax(logits, dim=-1), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        shown = loss.detach().clone()
        dist.all_reduce(shown)
        if dist.get_rank() == 0:
            probs = F.log_softmax(logits.detach(), dim=-1)
            print("loss", shown.item() / world_size, "max log-prob", probs.max().item())
