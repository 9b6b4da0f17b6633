# HF-example style (CodeBERT run_classifier): `evaluate` builds a DistributedSampler for the eval
# set and loops it inside a loop over task names. No backward, a function named for evaluation:
# the order never reaches the weights, so a repeated order costs nothing.
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def evaluate(model, datasets, task_names):
    results = {}
    for task in task_names:
        sampler = DistributedSampler(datasets[task])
        loader = DataLoader(datasets[task], sampler=sampler, batch_size=32)
        correct = 0
        for x, y in loader:
            with torch.no_grad():
                correct += (model(x).argmax(-1) == y).sum().item()
        results[task] = correct
    return results
