# A loss plus a term of unknown origin (a sparsity penalty read from the outputs): the sum's
# gradient still holds the loss's gradient undivided on every micro-step.
import torch.nn.functional as F


def train(model, loader, optimizer, args):
    for step, (x, y) in enumerate(loader):
        logits, sparsity = model(x)
        loss = F.cross_entropy(logits, y)
        if args.learn_mask:
            loss = loss + sparsity * args.sparse_w
        loss.backward()  # expect: accum-loss-unscaled
        if (step + 1) % args.accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
