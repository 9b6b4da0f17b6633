# A run-epoch function shared by training and validation: `if mode == "train":` holds on every
# pass or on none, so in training every micro-batch backprops through DDP and all-reduces.
from torch.nn.parallel import DistributedDataParallel as DDP


def run_epoch(data_iter, model, loss_compute, optimizer, mode="train", accum_iter=1):
    for i, batch in enumerate(data_iter):
        loss = loss_compute(model(batch.src), batch.tgt) / accum_iter
        if mode == "train":
            loss.backward()  # expect: accum-no-sync-missing
            if i % accum_iter == 0:
                optimizer.step()
                optimizer.zero_grad()


def main(module, loader, optimizer, args):
    model = DDP(module)
    run_epoch(loader, model, None, optimizer, accum_iter=args.accum_iter)
