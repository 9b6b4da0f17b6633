import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def test(gpu, args, build_model, loader):
    # a test worker copied from the training worker: it wraps the model it restores and only evaluates it
    model = build_model(args)
    model = DDP(model.cuda(), device_ids=[gpu], find_unused_parameters=True)
    model.load_state_dict(torch.load("best_model.t7"))
    model.eval()
    with torch.no_grad():
        for data, label in loader:
            logits = model(data.cuda())
            print((logits.argmax(1) == label.cuda()).float().mean())
