from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs

kwargs = DistributedDataParallelKwargs(find_unused_parameters=True)  # expect: find-unused-true
accelerator = Accelerator(kwargs_handlers=[kwargs])
