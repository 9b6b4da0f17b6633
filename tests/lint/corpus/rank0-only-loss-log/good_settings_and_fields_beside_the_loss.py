# diffusers DreamBooth style: the loss is combined with a configuration value named after it
# (`args.prior_loss_weight`), read out of a model output that holds other fields, and the rank-0
# logs show dataset lengths, paths and other output fields. None of these is the loss's value:
# taint flows from the loss to what is computed from it, not back to the namespace it was
# weighted with, nor to sibling fields of the container it was read from.
import logging

import torch.distributed as dist
import torch.nn.functional as F

logger = logging.getLogger(__name__)


def main(args, model, loader, optimizer, train_dataset):
    logger.info(f"  Num examples = {len(train_dataset)}")
    for step, batch in enumerate(loader):
        outputs = model(batch)
        loss = outputs.loss
        prior_loss = F.mse_loss(outputs.prior, batch["prior"])
        loss = loss + args.prior_loss_weight * prior_loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if dist.get_rank() == 0:
            logger.info(f"saving to {args.output_dir}, {len(loader)} batches, logits {outputs.logits.shape}")
            print(f"batch of {loss.shape[0] if loss.dim() else 1}")
