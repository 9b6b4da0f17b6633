# XLM-style Trainer.optimize: without amp every call steps; with amp it accumulates, stepping when
# n_iter is a multiple of accumulate_gradients and backpropagating alone otherwise. Nothing skips
# DDP's all-reduce on the non-stepping calls (config-gated: amp mode, accumulation count > 1).
import torch
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, optimizer, params):
        self.model = DistributedDataParallel(model)
        self.optimizer, self.params, self.n_iter = optimizer, params, 0

    def optimize(self, loss):
        params = self.params
        if params.amp == -1:
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        else:
            if self.n_iter % params.accumulate_gradients == 0:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    pass
                loss.backward()  # expect: accum-no-sync-missing
                self.optimizer.step()
                self.optimizer.zero_grad()
            else:
                loss.backward()

    def step(self, batch):
        loss = self.model(batch).mean()
        self.optimize(loss)
        self.n_iter += 1
