"""ddp-doctor's sitecustomize shim: `ddp-doctor run` puts this directory first on PYTHONPATH.

It runs at start-up of every Python process the command starts, and must stay cheap and safe:
1. it runs the `sitecustomize` it shadows (the venv's or the distribution's), if any;
2. in launcher processes (torchrun / `python -m torch.distributed.run` / accelerate agents,
   recognised by their command line and the absence of RANK) it only records how failed workers
   exited, when DDP_DOCTOR_EXITS_DIR is set (launch/exits.py: once torch's elastic errors module is
   imported, ChildFailedError is wrapped; nothing runs unless a worker failed);
3. otherwise it only installs a meta-path hook (probe/afterimport.py, standard library only), and
   starts the probe once torch is fully imported; a `find_spec("torch")` (`datasets`,
   `transformers`) is not an import (importing the probe eagerly cost ~86 ms per process,
   deferred ~10 ms; docs/probe.md, measured facts).
Nothing here may raise: a failure prints one line to stderr and the program runs unprobed.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_LAUNCHER_SCRIPTS = ("torchrun", "accelerate", "deepspeed")
_LAUNCHER_MODULES = (
    "torch.distributed.run",
    "torch.distributed.launch",
    "accelerate.commands.launch",
    "accelerate.commands.accelerate_cli",
    "deepspeed.launcher.runner",
    "deepspeed.launcher.launch",
)


def _chain_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _is_launcher():
    if "RANK" in os.environ:
        return False
    argv = list(getattr(sys, "orig_argv", sys.argv))
    scripts = [os.path.basename(a) for a in argv[:2]]
    if any(s in _LAUNCHER_SCRIPTS for s in scripts):
        return True
    return any(argv[i] == "-m" and argv[i + 1] in _LAUNCHER_MODULES for i in range(len(argv) - 1))


def _import_ddp_doctor():
    try:
        import ddp_doctor  # noqa: F401
    except ImportError:  # the training interpreter lacks ddp_doctor: use the copy beside this file
        sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))))


def _start_probe():
    _import_ddp_doctor()
    from ddp_doctor.probe.attach import attach_from_env

    attach_from_env()


def _record_exits():
    _import_ddp_doctor()
    from ddp_doctor.launch.exits import install

    install()


def _callback_failed(name, error):
    sys.stderr.write(f"ddp-doctor: probe not started ({type(error).__name__}: {error})\n")


def _load_afterimport():
    """ddp_doctor/probe/afterimport.py, loaded by path under its own name: importing the package
    (`ddp_doctor/__init__` imports typing) would cost every process ~5 ms for nothing; the probe
    later imports the same module object from sys.modules."""
    import importlib.util

    name = "ddp_doctor.probe.afterimport"
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "probe", "afterimport.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # not beside this file: the installed package's
        _import_ddp_doctor()
        import ddp_doctor.probe.afterimport as module

        return module
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def _after_import(module, callback):
    """Run `callback` once `module` is fully imported (probe/afterimport.py: a `find_spec` alone,
    as `datasets` does for torch, is not an import)."""
    _load_afterimport().AfterImport(_callback_failed).add(module, callback)


try:
    _chain_shadowed_sitecustomize()
except Exception as _error:  # noqa: BLE001 - same as Python does for a failing sitecustomize
    sys.stderr.write(f"ddp-doctor: the shadowed sitecustomize failed ({type(_error).__name__}: {_error})\n")

try:
    if _is_launcher():
        if os.environ.get("DDP_DOCTOR_EXITS_DIR"):
            _after_import("torch.distributed.elastic.multiprocessing.errors", _record_exits)
    elif os.environ.get("DDP_DOCTOR_RUN_DIR"):
        _after_import("torch", _start_probe)
except Exception as _error:  # noqa: BLE001 - the program runs unprobed
    _callback_failed("torch", _error)
