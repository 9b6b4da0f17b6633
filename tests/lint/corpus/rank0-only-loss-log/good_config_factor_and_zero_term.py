# rosinality StyleGAN2: the backward roots are products with configuration values (`args.r1`) and a
# `0 * real_pred[0]` term that keeps the graph alive; neither `args` nor the path-length running
# statistic returned beside the loss is the loss. The logged losses are reduced first.
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args, generator, discriminator, loader, d_optim, g_optim, reduce_loss_dict, g_path_regularize):
    generator = DDP(generator)
    mean_path_length = 0
    for real_img in loader:
        real_pred = discriminator(real_img)
        r1_loss = real_pred.pow(2).mean()
        discriminator.zero_grad()
        (args.r1 / 2 * r1_loss * args.d_reg_every + 0 * real_pred[0]).backward()
        d_optim.step()
        fake_img, latents = generator(real_img)
        path_loss, mean_path_length, path_lengths = g_path_regularize(fake_img, latents, mean_path_length)
        generator.zero_grad()
        (args.path_regularize * args.g_reg_every * path_loss).backward()
        g_optim.step()
        reduced = reduce_loss_dict({"r1": r1_loss, "path": path_loss})
        if dist.get_rank() == 0:
            print(f"r1 {reduced['r1'].item():.4f}; mean path {mean_path_length:.4f}; batch {args.batch}")
