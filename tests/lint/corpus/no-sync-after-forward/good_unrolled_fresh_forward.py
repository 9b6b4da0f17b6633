def two_micro_steps(model, x1, x2, optimizer):
    model.require_backward_grad_sync = False
    loss1 = model(x1).mean() / 2
    loss1.backward()
    model.require_backward_grad_sync = True
    loss2 = model(x2).mean() / 2
    loss2.backward()
    optimizer.step()
    optimizer.zero_grad()
