import torch


def train(generator, discriminator, loader, opt_d, metadata, rank):
    discriminator = torch.nn.parallel.DistributedDataParallel(discriminator)
    for step, real in enumerate(loader):
        fake = generator(torch.randn(real.shape[0], metadata["latent_dim"]))
        grad_penalty = discriminator(real).square().mean()
        # ``metadata["r1_lambda"]`` weighs the penalty: the configuration dict is no term of the loss
        grad_penalty = 0.5 * metadata["r1_lambda"] * grad_penalty
        d_loss = torch.nn.functional.softplus(discriminator(fake)).mean() + grad_penalty
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        if rank == 0 and step % 1000 == 0:
            print(f"step {step}: dataset {metadata['dataset']}, batch {metadata['batch_size']}")
