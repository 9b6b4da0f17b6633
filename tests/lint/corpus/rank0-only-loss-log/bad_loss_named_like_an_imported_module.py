# The file imports a module called ``loss`` and the training function rebinds the name to its own
# sum of loss terms (CLIP-Driven-Universal-Model): backward runs on that local ``loss``, and rank 0
# logs the epoch means of its terms, its own.
from torch.utils.tensorboard import SummaryWriter

from utils import loss


def train(model, loader, optimizer, dice_loss, bce_loss):
    dice_ave = 0.0
    bce_ave = 0.0
    for x, y in loader:
        logits = model(x)
        term_dice = dice_loss(logits, y)
        term_bce = bce_loss(logits, y)
        loss = term_bce + term_dice
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        dice_ave += term_dice.item()
        bce_ave += term_bce.item()
    return dice_ave / len(loader), bce_ave / len(loader)


def main(args, model, loader, optimizer, rank):
    dice_loss = loss.DiceLoss()
    bce_loss = loss.BCELoss()
    writer = SummaryWriter() if rank == 0 else None
    for epoch in range(args.epochs):
        loss_dice, loss_bce = train(model, loader, optimizer, dice_loss, bce_loss)
        if rank == 0:
            writer.add_scalar("train_dice_loss", loss_dice, epoch)  # expect: rank0-only-loss-log
