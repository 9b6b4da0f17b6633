# The epoch loss rank 0 logs is its own (a bug), but the checkpoint path ``save_model`` returns is
# not the loss even though the loss is one of its arguments: the helper returns a path built from
# the epoch (CLIP4Clip's ``output_model_file = save_model(epoch, args, model, optimizer, tr_loss)``).
import logging
import os

import torch

logger = logging.getLogger(__name__)


def save_model(epoch, args, model, optimizer, tr_loss):
    output_model_file = os.path.join(args.output_dir, f"pytorch_model.bin.{epoch}")
    torch.save(model.state_dict(), output_model_file)
    torch.save({"epoch": epoch, "optimizer": optimizer.state_dict(), "loss": tr_loss}, output_model_file + ".opt")
    return output_model_file


def train_epoch(model, loader, optimizer):
    total_loss = 0.0
    for batch in loader:
        loss = model(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += float(loss)
    return total_loss / len(loader)


def main(args, model, loader, optimizer, local_rank):
    best_file = None
    for epoch in range(args.epochs):
        tr_loss = train_epoch(model, loader, optimizer)
        if local_rank == 0:
            logger.info("Epoch %d Finished, Train Loss: %f", epoch + 1, tr_loss)  # expect: rank0-only-loss-log
            output_model_file = save_model(epoch, args, model, optimizer, tr_loss)
            best_file = output_model_file
            logger.info("The best model is: {}".format(best_file))
