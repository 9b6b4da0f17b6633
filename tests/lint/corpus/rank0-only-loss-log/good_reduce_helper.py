import torch.distributed as dist


def reduce_mean(t):
    t = t.clone()
    dist.all_reduce(t)
    return t / dist.get_world_size()


class Trainer:
    def step(self, batch):
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
        logged = reduce_mean(loss.detach())
        if self.rank == 0:
            self.logger.info("loss %.4f", logged.item())
