from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def train(model, loader, optimizer):
    model = FSDP(model)
    for batch in loader:
        model(batch).sum().backward()
        model.clip_grad_norm_(1.0)
        optimizer.step()
        optimizer.zero_grad()
