import lightning.pytorch as pl
from lightning.pytorch.strategies import DDPStrategy


def main(model, datamodule):
    trainer = pl.Trainer(strategy=DDPStrategy(find_unused_parameters=False), max_epochs=10)
    trainer.fit(model, datamodule=datamodule)
    other = pl.Trainer(strategy="ddp", max_epochs=10)
    other.fit(model, datamodule=datamodule)
