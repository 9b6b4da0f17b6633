import logging

import torch


def main(model, loader, optimizer, rank):
    model = torch.nn.parallel.DistributedDataParallel(model)
    batch_num = 0
    for sample in loader:
        loss = model(sample).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        batch_num += 1
        if rank == 0:
            metrics = {"loss": loss.item(), "batch_num": batch_num}
            logging.info(f"Batch: {batch_num} - {metrics}")  # expect: rank0-only-loss-log
            logging.info(f"Saving model. Batch = {batch_num}")
            logging.info("loss %.3f", metrics["loss"])  # the same rank-0 block: reported once, at its first log (also_at)
