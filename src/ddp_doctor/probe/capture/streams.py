"""The `stdout`/`stderr` source: what the script prints, seen inside the rank, without changing it.

Choice (docs/probe.md, "Logged loss"): the probe runs inside every rank, so it wraps the rank's
`sys.stdout` and `sys.stderr` there instead of piping the ranks' output through the launcher. The
launcher does not own the ranks' streams under torchrun (its agent hands them the terminal) and a
pipe would change what the user sees (isatty false: no colours, no progress bars) and lose which
rank printed a line.

The stream object itself stays in place: `sys.stdout is sys.__stdout__` and
`isinstance(sys.stdout, io.TextIOWrapper)` hold under the probe as without it (scripts and
libraries test both). Only its `write` is shadowed by an instance attribute, which `print`,
`writelines`, `logging` and C code calling `PyFile_WriteObject` all look up first (the same
mechanism wandb's console capture uses). A stream that takes no instance attribute (`__slots__`,
a read-only proxy) is replaced by `TeeStream`, a transparent proxy instead.

Either way `TeeStream.write` hands the text to the real stream's own `write` first and returns
its result unchanged, then looks at the text; every other attribute of the proxy (`buffer`,
`fileno`, `isatty`, `encoding`, `flush`, ...) is the real stream's; attributes assigned to it stay
on the proxy. Text is split into lines on "\\n" and "\\r" (tqdm
redraws its bar with "\\r"); a partial line is kept until its end arrives (at most MAX_PENDING
characters). Only lines that contain "loss" are parsed (patterns.py). Binary writes through
`.buffer` and writes to the file descriptor by C code pass by unseen. In the proxy case,
`logging.StreamHandler`s that already hold the real stream when the probe starts are pointed at
the proxy (`setStream`), so `logging` output is seen whenever it was configured.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Any

from ddp_doctor.probe.capture import sink
from ddp_doctor.probe.capture.patterns import parse_line
from ddp_doctor.probe.state import PROBE

MAX_PENDING = 8192  # characters of an unfinished line kept; beyond, the line is dropped
INSTRUMENT = "capture_stdout"

_LINE = re.compile(r"([^\r\n]*)([\r\n])")
# True while lines are parsed: a write made meanwhile (by the probe, another thread) is passed on
# unread rather than parsed re-entrantly
_parsing = False
# Set in a forked child (DataLoader worker): only the training process records; checked per write
# instead of os.getpid(), a system call.
_forked = False


def _after_fork_in_child() -> None:
    global _forked
    _forked = True


os.register_at_fork(
    after_in_child=_after_fork_in_child
)  # set while a line is parsed: a write made by the probe itself is not re-read


class TeeStream:
    """Wraps a text stream; every write reaches it unchanged, loss lines are recorded on the side."""

    def __init__(self, stream: Any, name: str) -> None:
        self.__dict__["_ddp_doctor_stream"] = stream
        # the stream's own write, taken before install() may shadow it with ours on the stream
        self.__dict__["_ddp_doctor_write"] = stream.write
        self.__dict__["_ddp_doctor_name"] = name
        self.__dict__["_ddp_doctor_pending"] = ""
        self.__dict__["_ddp_doctor_last"] = None  # (key, value) of the last "\r"-ended line

    def write(self, text: Any) -> Any:
        result = self._ddp_doctor_write(text)
        # cheapest checks first: this runs on every write of the program (bench/capture_overhead.py)
        if (
            type(text) is str
            and not _forked
            and PROBE.options is not None
            and INSTRUMENT not in PROBE.disabled
        ):
            self._ddp_doctor_see(text)
        return result

    def writelines(self, lines: Any) -> None:
        for line in lines:  # through write(), so each piece is seen like a print's
            self.write(line)

    def _ddp_doctor_see(self, text: str) -> None:
        state = self.__dict__
        pending = state["_ddp_doctor_pending"]
        if "\n" not in text and "\r" not in text:
            state["_ddp_doctor_pending"] = pending + text if len(pending) + len(text) <= MAX_PENDING else ""
            return
        global _parsing
        whole = pending + text if pending else text
        if text[-1] == "\n" or text[-1] == "\r":  # print() ends with its own "\n" write
            end, state["_ddp_doctor_pending"] = len(whole) - 1, ""
        else:
            end = max(whole.rfind("\n"), whole.rfind("\r"))
            tail = whole[end + 1 :]
            state["_ddp_doctor_pending"] = tail if len(tail) <= MAX_PENDING else ""
        if ("oss" not in whole and "OSS" not in whole) or _parsing:
            return  # the common case: no loss on these lines
        _parsing = True
        try:
            for match in _LINE.finditer(whole, 0, end + 1):
                _line(self, match.group(1), carriage=match.group(2) == "\r")
        except Exception as error:  # noqa: BLE001 - never into the user's print
            PROBE.fail(INSTRUMENT, error)
        finally:
            _parsing = False

    # --- transparency: everything else is the real stream's --------------------------------------
    def __getattr__(self, name: str) -> Any:
        return getattr(self._ddp_doctor_stream, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # Kept on the proxy, never passed down: wandb's console capture does
        # `sys.stdout.write = wrapper(sys.stdout.write)`; set on the real stream, its wrapper would
        # call our write, which calls the real stream's write: the wrapper again, forever.
        self.__dict__[name] = value

    def __iter__(self) -> Any:
        return iter(self._ddp_doctor_stream)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._ddp_doctor_stream.__exit__(*exc)

    def __repr__(self) -> str:
        return repr(self._ddp_doctor_stream)


def _line(tee: TeeStream, line: str, carriage: bool) -> None:
    values, user_step = parse_line(line)
    if not values:
        return
    source = tee._ddp_doctor_name
    for v in values:
        if carriage:
            # a progress bar redraws the same postfix many times: one record per new value
            if tee._ddp_doctor_last == (v.key, v.value):
                continue
            tee.__dict__["_ddp_doctor_last"] = (v.key, v.value)
        sink.emit(source, v.key, v.value, v.resolution, user_step)


def install() -> None:
    """Watch sys.stdout and sys.stderr (once): in place where the stream takes an instance
    attribute, else behind a TeeStream, with logging handlers that hold the real one repointed."""
    originals = {}
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is None or isinstance(stream, TeeStream) or watched(stream):
            continue
        tee = TeeStream(stream, name)
        if _shadow_write(stream, tee):
            continue
        originals[id(stream)] = tee
        setattr(sys, name, tee)
    if originals:
        _repoint_handlers(originals)


def watched(stream: Any) -> bool:
    """True when `stream.write` is already a TeeStream's (watched in place)."""
    return isinstance(getattr(getattr(stream, "write", None), "__self__", None), TeeStream)


def _shadow_write(stream: Any, tee: TeeStream) -> bool:
    """Set `stream.write = tee.write` on the stream object itself; False where it cannot be."""
    try:
        stream.write = tee.write
    except (AttributeError, TypeError):
        return False
    return watched(stream)


def _repoint_handlers(originals: dict[int, TeeStream]) -> None:
    loggers = [logging.getLogger()]
    loggers += [lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    for lg in loggers:
        for handler in list(lg.handlers):
            if type(handler) is logging.StreamHandler and id(handler.stream) in originals:
                handler.setStream(originals[id(handler.stream)])
