# CleanRL PPO: the value loss is ``((newvalue - returns) ** 2).mean()``; the returns and values it
# squares are not the loss, so the explained variance computed from them is not a rank-local loss.
import numpy as np
import torch.distributed as dist


def update(agent, optimizer, writer, b_values, b_returns, step):
    newvalue = agent.value()
    v_loss = 0.5 * ((newvalue - b_returns) ** 2).mean()
    loss = agent.policy_loss() + v_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
    explained_var = 1 - np.var(y_true - y_pred) / np.var(y_true)
    if dist.get_rank() == 0:
        writer.add_scalar("losses/explained_variance", explained_var, step)
