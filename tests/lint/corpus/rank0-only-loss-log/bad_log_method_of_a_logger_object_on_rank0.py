# ``logger.log_string(...)``: a ``log_*`` method of an object named as a logger, called under a
# rank-0 test with the running loss of this rank.
import torch.distributed as dist


def train(net, loader, optimizer, logger, log_interval):
    loss_cum = 0.0
    for step, data in enumerate(loader):
        loss = net(data)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss_cum += loss.detach().cpu().numpy()
        if (step + 1) % log_interval == 0 and dist.get_rank() == 0:
            logger.log_string("loss:%f" % (loss_cum / log_interval))  # expect: rank0-only-loss-log
            loss_cum = 0.0
