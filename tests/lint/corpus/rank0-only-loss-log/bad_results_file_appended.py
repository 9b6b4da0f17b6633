# yolov7: rank 0 appends its own running mean loss to results.txt every epoch: a log file, with a
# YAML snapshot written beside it under the same name ``f`` (that one saves a state).
import torch.distributed as dist
import yaml


def train(model, loader, optimizer, results_file, hyp):
    with open("hyp.yaml", "w") as f:
        yaml.dump(hyp, f)
    for epoch in range(3):
        mloss = 0.0
        for i, batch in enumerate(loader):
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
            mloss = (mloss * i + loss.item()) / (i + 1)
        if dist.get_rank() == 0:
            with open(results_file, "a") as f:
                f.write(f"{epoch} {mloss:.4f}\n")  # expect: rank0-only-loss-log
