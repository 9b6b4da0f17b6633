# One logging event, one finding, where the rank-0 test is: the caller tests the rank and hands the
# loss to a plain print helper (clip_finetune's ``if is_master(): print_step(step, loss_item)``), so
# the finding is at the guarded call, not inside the helper that any rank could call.
import torch.distributed as dist


def print_step(step, data):
    print(f"step {step}: loss {data:.4f}")


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss_item = loss.item()
        if dist.get_rank() == 0:
            print_step(step, loss_item)  # expect: rank0-only-loss-log
