# apex `amp.scale_loss` of a loss already divided by the accumulation count (Swin-style), and a
# loss divided in one branch of an `if` that the backward follows (the division reaches it).
from apex import amp


def train(model, criterion, optimizer, loader, accum_steps):
    for idx, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss = loss / accum_steps
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        if (idx + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def train_branch(model, criterion, optimizer, loader, accum_steps):
    for idx, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        if accum_steps > 1:
            loss = loss / accum_steps
        with amp.scale_loss(loss, optimizer, delay_unscale=(idx + 1) % accum_steps != 0) as scaled:
            scaled.backward()
        if (idx + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
