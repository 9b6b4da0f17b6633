# A float16 teacher that is only evaluated, and a student trained in float32: no float16 training.
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def distill(student, teacher, loader, optimizer):
    teacher = teacher.cuda().half().eval()
    student = DDP(student.cuda())
    for x, y in loader:
        with torch.no_grad():
            soft = teacher(x.half()).float()
        loss = F.kl_div(F.log_softmax(student(x), -1), F.softmax(soft, -1), reduction="batchmean")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
