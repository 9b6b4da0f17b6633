# The loss plus an auxiliary term, both divided by the accumulation count before backward;
# and a sum with an already divided term is not proven raw either.
import torch.nn.functional as F


def train(model, loader, optimizer, args):
    for step, (x, y) in enumerate(loader):
        logits, sparsity = model(x)
        loss = F.cross_entropy(logits, y)
        if args.learn_mask:
            loss = loss + sparsity * args.sparse_w
        loss = loss / args.accum_steps
        loss.backward()
        aux = F.mse_loss(logits, y) + sparsity / args.accum_steps
        aux.backward()
        if (step + 1) % args.accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
