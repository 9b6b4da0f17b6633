# DINO's linear probe: the BatchNorm backbone is frozen in eval(); only the linear classifier it
# feeds (its width read from the backbone) is wrapped and trained.
import torch
import torch.nn as nn
import torchvision


def eval_linear(args, loader):
    model = torchvision.models.resnet50()
    embed_dim = model.fc.weight.shape[1]
    model.fc = nn.Identity()
    model.cuda()
    model.eval()
    linear_classifier = nn.Linear(embed_dim, args.num_labels).cuda()
    linear_classifier = nn.parallel.DistributedDataParallel(linear_classifier, device_ids=[args.gpu])
    optimizer = torch.optim.SGD(linear_classifier.parameters(), lr=0.01)
    linear_classifier.train()
    for x, y in loader:
        with torch.no_grad():
            features = model(x)
        loss = nn.functional.cross_entropy(linear_classifier(features), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
