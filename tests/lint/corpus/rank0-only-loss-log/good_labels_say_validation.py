# A log helper shared by training and validation: its branch for validation values labels them
# (``cv/...`` TensorBoard tags, ``cv_loss {}`` / ``val loss`` before the placeholder), so what it
# writes there is not rank 0's training loss.
import torch.distributed as dist


def log_step(writer, loss_dict, step, train):
    if dist.get_rank() == 0 and not train:
        for name, value in loss_dict.items():
            writer.add_scalar("cv/{}".format(name), value, step)
        print("step {} cv_loss {}".format(step, loss_dict["loss"]))
        print(f"step {step} val loss {loss_dict['loss']:.3f}")
        print("eval loss %.3f" % loss_dict["loss"])


def train(model, loader, optimizer, writer):
    for step, x in enumerate(loader):
        loss_dict = model(x)
        loss = loss_dict["loss"]
        loss.backward()
        optimizer.step()
        log_step(writer, loss_dict, step, train=True)
