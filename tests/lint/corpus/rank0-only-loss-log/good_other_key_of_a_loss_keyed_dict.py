# ml-mdm: the checkpoint's items dict holds the local loss under "loss"; the step counter read back
# out of it under "batch_num" is not the loss, and logging it logs no loss value.
import logging

import torch


def main(model, loader, optimizer, rank, resume):
    model = torch.nn.parallel.DistributedDataParallel(model)
    other_items = torch.load(resume) if resume else None
    batch_num = 0
    if other_items is not None:
        batch_num = other_items["batch_num"]
    for sample in loader:
        loss = model(sample).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        batch_num += 1
        if rank == 0:
            logging.info(f"Saving model. Batch = {batch_num}")
            other_items = {"batch_num": batch_num, "loss": loss.item()}
            torch.save(other_items, "ckpt.pt")
