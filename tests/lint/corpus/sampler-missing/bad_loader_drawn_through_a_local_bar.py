from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, SequentialSampler
from tqdm import tqdm


def main(model, train_set, optimizer):
    model = DDP(model)
    loader = DataLoader(train_set, batch_size=8, sampler=SequentialSampler(train_set))  # expect: sampler-missing
    for _ in range(10):
        # the bar wraps the loader in the same function: the training loop draws from it
        pbar = tqdm(loader)
        for images, targets in pbar:
            loss = model(images, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
