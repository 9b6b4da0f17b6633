"""Which numbers in a printed line are a loss: the text patterns of the `stdout`/`stderr` source.

A line is looked at only when it contains "loss" (any case), so the regular expression below runs
on a tiny fraction of what a training script prints. It accepts the forms training scripts use:

    loss: 2.31          loss=2.31         'loss': 2.31        "train/loss": 2.31
    step 10 | loss 2.3100               iter 10: loss 2.3100, time 12.3ms     (nanoGPT)
    Epoch [1/10], Step [100/600], Loss: 0.2345                              (tutorials)
    100%|█████| 10/10 [00:01<00:00, loss=2.31]                              (tqdm postfix)
    train loss 2.31 | val loss 2.40      loss tensor(2.3100, grad_fn=<...>)   Loss 0.41 (0.45)

The key is the word "loss" with what is glued to it (`train/loss`, `loss_avg`) and at most one
word in front separated by a space (`train loss`, `val loss`), lower-cased, quotes dropped. Each
value keeps its printed resolution (half a unit of the last printed digit): a value printed as
"2.31" can be any loss in [2.305, 2.315], which the analysis uses as the tolerance of a match.
Pure functions, no torch: the stream wrapper calls them and tests call them directly.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

NUMBER = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"
_LOSS = re.compile(
    r"""(?ix)
    (?:(?P<pre>[a-z][\w]*)[ ](?=[\w./-]*loss))?      # one word before: "train loss", "val loss"
    (?P<key>[\w./-]*loss[\w./-]*)                     # the key itself: loss, train/loss, loss_avg
    ['"]?\)?\s*(?:[:=]|is)?\s*                        # 'loss': / loss= / loss / loss is
    (?:tensor\(|array\(|np\.float\d*\()?              # loss: tensor(2.31, grad_fn=...)
    ['"]?                                             # {'loss': '2.31'} (HF's printed logs)
    (?P<value>"""
    + NUMBER
    + r""")(?![\w.])"""
)
_STEP = re.compile(r"(?i)\b(?:global[_ ]step|step|iter(?:ation)?|it|batch|update)s?\b\s*[:=#]?\s*\[?\s*(\d+)")
# Keys of something else than the training loss value (they still name "loss"): left out.
_NOT_A_VALUE = ("scale", "scaler", "weight", "fn", "type", "func", "_std")
MAX_LINE = 4096  # characters of a line that are parsed; a longer line is cut (progress bars, dumps)


@dataclass(frozen=True)
class LossValue:
    key: str
    value: float
    resolution: float  # half a unit of the last printed digit (0 for an exact float)


def resolution_of(text: str) -> float:
    """Half a unit of the last digit of a printed number: "2.31" → 0.005, "2" → 0.5, "2.3e-4" → 5e-6."""
    text = text.strip().lower().lstrip("+-")
    if text in ("nan", "inf"):
        return 0.0
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.partition(".")[2])
    try:
        exp = int(exponent) if exponent else 0
    except ValueError:
        exp = 0
    return 0.5 * 10.0 ** (exp - decimals)


def float_resolution(value: float) -> float:
    """Resolution of a float handed over as a number: its shortest repr tells how it was rounded.

    HF Trainer logs ``round(loss, 4)``: repr "2.3456" → 5e-5; an unrounded float's repr has ~16
    significant digits, so the resolution is negligible.
    """
    if not math.isfinite(value):
        return 0.0
    return resolution_of(repr(float(value)))


def parse_line(line: str) -> tuple[list[LossValue], int | None]:
    """The loss values in one printed line and the step/iteration number it names, if any."""
    if "oss" not in line and "OSS" not in line:
        return [], None
    line = line[:MAX_LINE]
    values = []
    for match in _LOSS.finditer(line):
        key = match.group("key").strip("'\"").lower()
        if any(word in key for word in _NOT_A_VALUE):
            continue
        pre = match.group("pre")
        if pre and pre.lower() not in ("is", "the", "and", "step", "iter", "epoch"):
            key = f"{pre.lower()} {key}"
        text = match.group("value")
        try:
            value = float(text)
        except ValueError:
            continue
        values.append(LossValue(key, value, resolution_of(text)))
    step = None
    if values:
        found = _STEP.search(line)
        if found:
            step = int(found.group(1))
    return values, step
