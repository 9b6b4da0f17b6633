# KAIR-style: the total is summed from terms (each term is a local loss too), and a message built
# in a loop over the loss dict is logged on rank 0 after the loop.
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, logger, opt, d_lossfn, d_weight):
    model = DDP(model)
    for step, (x, y) in enumerate(loader):
        losses = model(x, y)
        loss_G_total = 0
        G_loss = sum(losses.values())
        loss_G_total += G_loss
        D_loss = d_weight * d_lossfn(model(y), x)
        loss_G_total += D_loss
        optimizer.zero_grad()
        loss_G_total.backward()
        optimizer.step()
        if opt["rank"] == 0:
            print(f"D {D_loss.item():.3e}")  # expect: rank0-only-loss-log
            message = f"<iter {step}> "
            for k, v in losses.items():
                message += f"{k}: {v.item():.3e} "
            logger.info(message)  # expect: rank0-only-loss-log
