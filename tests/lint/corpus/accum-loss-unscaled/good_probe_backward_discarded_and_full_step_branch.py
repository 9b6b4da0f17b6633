# Two backwards in an accumulation loop that do not accumulate:
# - lingua style: every N steps a probe runs forward and backward on half a batch to collect
#   statistics, then `optimizer.zero_grad()` discards its gradients before the real micro-step;
# - Swin/MiniViT style: the `else` of `if accumulation_steps > 1:` backprops and steps at once.
import torch.nn.functional as F


def train(model, loader, optimizer, accum_steps, probe_every):
    for step, (x, y) in enumerate(loader):
        if step % probe_every == 0:
            probe_loss = F.cross_entropy(model(x[:1]), y[:1])
            probe_loss.backward()
            optimizer.zero_grad()
        if accum_steps > 1:
            loss = F.cross_entropy(model(x), y) / accum_steps
            loss.backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
        else:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
