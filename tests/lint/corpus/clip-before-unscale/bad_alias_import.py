from torch.amp import GradScaler
from torch.nn.utils import clip_grad_norm_ as clip


class Loop:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.grad_scaler = GradScaler("cuda")

    def step(self, batch):
        loss = self.model(batch).mean()
        self.grad_scaler.scale(loss).backward()
        norm = clip(self.model.parameters(), max_norm=0.5)  # expect: clip-before-unscale
        self.grad_scaler.step(self.opt)
        self.grad_scaler.update()
        return norm
