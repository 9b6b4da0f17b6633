from accelerate import Accelerator
from torch.utils.data import DataLoader


def main(model, optimizer, dataset):
    accelerator = Accelerator()
    loader = DataLoader(dataset, batch_size=16, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        accelerator.backward(model(**batch).loss)
        optimizer.step()
        optimizer.zero_grad()
