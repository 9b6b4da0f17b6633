# StyleTTS2-style: a dict of modules, one holding BatchNorm2d, each handed to accelerate's prepare,
# which wraps it in DDP on several GPUs; nothing converts to SyncBatchNorm.
import torch.nn as nn
from accelerate import Accelerator


class PitchExtractor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), nn.ReLU())


def build_model(pitch_extractor, hidden):
    return {"pitch_extractor": pitch_extractor, "decoder": nn.Linear(hidden, hidden)}


def main(train_loader, hidden):
    accelerator = Accelerator(split_batches=True)
    pitch_extractor = PitchExtractor()
    model = build_model(pitch_extractor, hidden)
    for k in model:
        model[k] = accelerator.prepare(model[k])  # expect: batchnorm-unsynced
    train_loader = accelerator.prepare(train_loader)
    return model, train_loader
