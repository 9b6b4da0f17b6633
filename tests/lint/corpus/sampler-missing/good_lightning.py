import lightning as L
from torch.utils.data import DataLoader


class Data(L.LightningDataModule):
    def __init__(self, ds):
        super().__init__()
        self.ds = ds

    def train_dataloader(self):
        return DataLoader(self.ds, batch_size=32, shuffle=True)
