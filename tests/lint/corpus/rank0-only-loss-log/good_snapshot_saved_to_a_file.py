# wenet ``save_model``: rank 0 writes the step's info (the loss among it) into the checkpoint's YAML,
# a file opened for writing: a state saved beside the checkpoint, not a training log.
import torch.distributed as dist
import yaml


def train(model, loader, optimizer, model_dir):
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        info = {"step": step, "loss": loss.item()}
        if dist.get_rank() == 0:
            with open(f"{model_dir}/{step}.yaml", "w") as fout:
                fout.write(yaml.dump(info))
