# lingua style: the logged metrics dict is updated with the loss averaged over ranks by a helper
# whose inner helper calls dist.all_reduce (no reduce word in the outer helper's name).
import torch
import torch.distributed as dist


def dist_mean(x):
    tensor = torch.tensor(x).cuda()
    dist.all_reduce(tensor, op=dist.ReduceOp.AVG)
    return tensor


def dist_mean_dict(x):
    return {k: dist_mean(v).item() for k, v in x.items()}


def train(model, loader, optimizer, metric_logger, log_freq):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % log_freq == 0:
            metrics = {"lr": optimizer.param_groups[0]["lr"]}
            to_sync = {"loss/out": loss.item()}
            metrics.update(dist_mean_dict(to_sync))
            if dist.get_rank() == 0:
                metric_logger.log(metrics)
