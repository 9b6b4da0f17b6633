from torch.utils.data import DataLoader, RandomSampler
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


def train(args, model, train_dataset, optimizer):
    train_sampler = RandomSampler(train_dataset) if args.local_rank == -1 else DistributedSampler(train_dataset)  # expect: set-epoch-missing
    train_dataloader = DataLoader(train_dataset, sampler=train_sampler, batch_size=8)
    global_step = 0
    while global_step < args.max_steps:
        epoch_iterator = tqdm(train_dataloader, desc="Iteration")
        for step, batch in enumerate(epoch_iterator):
            model(batch).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
            global_step += 1
