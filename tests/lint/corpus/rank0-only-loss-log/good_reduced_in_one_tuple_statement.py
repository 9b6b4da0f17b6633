import torch.distributed as dist


def train(model, loader, optimizer, writer):
    for step, (x, y) in enumerate(loader):
        main_loss, aux_loss = model(x, y)
        loss = main_loss + 0.4 * aux_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        n = x.size(0)
        main_loss, loss = main_loss.detach() * n, loss.detach() * n
        count = y.new_tensor([n])
        # several in-place reduces written as one tuple statement: each one reduces its argument
        dist.all_reduce(main_loss), dist.all_reduce(loss), dist.all_reduce(count)
        n = count.item()
        main_loss, loss = main_loss / n, loss / n
        if dist.get_rank() == 0:
            writer.add_scalar("loss", loss.item(), step)
            writer.add_scalar("main_loss", main_loss.item(), step)
