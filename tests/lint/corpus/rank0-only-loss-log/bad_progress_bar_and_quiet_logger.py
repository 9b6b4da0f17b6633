import logging

from tqdm import tqdm

logger = logging.getLogger()


def setup_logging(rank):
    if rank == 0:
        logger.setLevel(logging.INFO)
    else:
        logger.setLevel(logging.ERROR)


def train(accelerator, model, data, optimizer, steps):
    running = 0.0
    with tqdm(total=steps, disable=not accelerator.is_main_process) as pbar:
        for step in range(steps):
            loss = model(next(data))
            accelerator.backward(loss)
            optimizer.step()
            running += loss.item()
            pbar.set_description(f"loss: {running / (step + 1):.4f}")  # expect: rank0-only-loss-log
            logger.info("step %d loss %.4f", step, loss.item())  # expect: rank0-only-loss-log
