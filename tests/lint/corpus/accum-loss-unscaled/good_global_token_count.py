import torch
import torch.distributed as dist
import torch.nn.functional as F


def train_step(model, micro_batches, optimizer):
    n_tokens = torch.tensor(sum(int((b["labels"] != -100).sum()) for b in micro_batches))
    dist.all_reduce(n_tokens)
    for batch in micro_batches:
        logits = model(batch["input_ids"])
        loss_sum = F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), reduction="sum")
        (loss_sum * dist.get_world_size() / n_tokens).backward()
    optimizer.step()
    optimizer.zero_grad()
