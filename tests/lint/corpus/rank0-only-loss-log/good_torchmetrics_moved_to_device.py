import torch
from torchmetrics import MeanMetric


def train(model, loader, optimizer, rank, logger):
    model = torch.nn.parallel.DistributedDataParallel(model.cuda(rank), device_ids=[rank])
    # ``.cuda(rank)`` / ``.to(device)`` return the metric itself: it still syncs in ``compute()``
    train_loss = MeanMetric(nan_strategy="error").cuda(rank)
    for batch in loader:
        loss = model(**batch).loss
        train_loss.update(loss.detach().float())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    log_items = {"train_loss": train_loss.compute()}
    if rank == 0:
        logger.info(f"train loss: {log_items['train_loss'].item()}")
