# A same-file helper returns the loss first in a tuple (its terms after it); the step function
# unpacks it, backprops it undivided on every call and steps only every `accumulation_steps`
# iterations. A term missing on some path (`lm_loss = torch.tensor(0)`) adds nothing to the sum.
# The same loss backpropagated again in an extra pass of the loop is one finding, not two.
import torch
import torch.nn.functional as F


def main(model, optimizer, scaler, accumulation_steps, pair_lm, adversarial_stride):
    cls_criterion = torch.nn.BCEWithLogitsLoss()

    def forward_train_loss(x, y, lm_y):
        split, lm_logits = model(x)
        split_loss = cls_criterion(split, y)
        if pair_lm:
            lm_loss = F.binary_cross_entropy_with_logits(lm_logits, lm_y)
        else:
            lm_loss = torch.tensor(0)
        loss = split_loss + lm_loss
        return loss, split_loss, lm_loss

    def train(engine, batch):
        x, y, lm_y = batch
        loss, split_loss, lm_loss = forward_train_loss(x, y, lm_y)
        scaler.scale(loss).backward()  # expect: accum-loss-unscaled
        if engine.state.iteration % adversarial_stride == 0:
            loss, split_loss, lm_loss = forward_train_loss(x, y, lm_y)
            scaler.scale(loss).backward()
        if engine.state.iteration % accumulation_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        return split_loss.item()

    return train
