# LoRA gpt2_ft style: a same-file helper backprops its parameter through apex's
# `amp.scale_loss(...) as scaled` alias, the loss goes into an `AverageMeter` (a class built, not a
# reduction), and a log string built from it is printed on rank 0.
from apex import amp


class AverageMeter:
    def __init__(self):
        self.val, self.avg, self.sum, self.count = 0, 0, 0, 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def optimizer_step(_loss, _optimizer, args, is_update=True):
    if args.fp16:
        with amp.scale_loss(_loss, _optimizer) as _scaled_loss:
            _scaled_loss.backward()
    else:
        _loss.backward()
    if is_update:
        _optimizer.step()
        _optimizer.zero_grad()


def train(model, loader, optimizer, args):
    avg_lm_loss = AverageMeter()
    for idx, data in enumerate(loader):
        _lm_loss = model(data).mean()
        avg_lm_loss.update(_lm_loss.item())
        optimizer_step(_lm_loss, optimizer, args)
        if idx % args.log_interval == 0:
            log_str = f"| step {idx} | loss {avg_lm_loss.val:5.2f} | avg loss {avg_lm_loss.avg:5.2f}"
            if args.rank == 0:
                print(log_str)  # expect: rank0-only-loss-log
