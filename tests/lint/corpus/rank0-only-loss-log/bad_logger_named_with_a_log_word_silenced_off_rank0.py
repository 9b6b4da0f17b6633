# A logger whose name has "log" as one of its words (``Log_file``), set to WARN on the ranks
# other than 0: its ``info`` records of the running loss are rank 0's alone.
import logging


def setuplogger(rank):
    Log_file = logging.getLogger("Log_file")
    if rank in [-1, 0]:
        Log_file.setLevel(logging.INFO)
        Log_file.addHandler(logging.StreamHandler())
    else:
        Log_file.setLevel(logging.WARN)
    return Log_file


def train(model, loader, optimizer, rank):
    Log_file = setuplogger(rank)
    total = 0.0
    for step, batch in enumerate(loader):
        bz_loss = model(batch)
        total += bz_loss.item()
        bz_loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0:
            Log_file.info("batch loss: {:.5f}".format(total / (step + 1)))  # expect: rank0-only-loss-log
