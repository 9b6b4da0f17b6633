# DomainBed / GAN style: the update method alternates between two optimizers by a modulo counter;
# each branch zeroes, backprops and steps its own optimizer. No micro-step is accumulated.
import torch.nn.functional as F


class Algorithm:
    def __init__(self, disc_opt, gen_opt, d_steps):
        self.disc_opt, self.gen_opt, self.d_steps = disc_opt, gen_opt, d_steps
        self.update_count = 0

    def update(self, x, y, domains):
        self.update_count += 1
        disc_loss = F.cross_entropy(self.discriminator(x), domains)
        if self.update_count % (1 + self.d_steps) < self.d_steps:
            self.disc_opt.zero_grad()
            disc_loss.backward()
            self.disc_opt.step()
            return {"loss_disc": disc_loss.item()}
        else:
            gen_loss = F.cross_entropy(self.classifier(x), y) - disc_loss
            self.gen_opt.zero_grad()
            gen_loss.backward()
            self.gen_opt.step()
            return {"loss_gen": gen_loss.item()}
