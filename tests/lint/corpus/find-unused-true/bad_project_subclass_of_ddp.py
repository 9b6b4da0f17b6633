from torch.nn.parallel import DistributedDataParallel


class DDP(DistributedDataParallel):
    """NATSpeech: routes forward to the task's training/validation step."""

    def forward(self, *inputs, **kwargs):
        return self.module.training_step(*inputs, **kwargs)


def configure_ddp(task, gpu):
    return DDP(task, device_ids=[gpu], find_unused_parameters=True)  # expect: find-unused-true
