import contextlib


def micro_steps(net, chunks, opt):
    for k, chunk in enumerate(chunks):
        out = net(chunk)
        sync = contextlib.nullcontext() if k == len(chunks) - 1 else net.no_sync()
        with sync:  # expect: no-sync-after-forward
            (out.sum() / len(chunks)).backward()
    opt.step()
    opt.zero_grad()
