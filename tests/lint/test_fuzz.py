"""Lint never crashes: random text, mangled snippets and shuffled statements (hypothesis).

"Never crashes" means no exception escapes and no rule reports an internal error; a file that
does not parse is a parse-error diagnostic, which is the expected answer for garbage.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddp_doctor.lint.engine import lint_source
from ddp_doctor.lint.notebook import read_notebook

CORPUS = Path(__file__).parent / "corpus"
SNIPPETS = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*/*.py"))]
LINES = sorted({line for s in SNIPPETS for line in s.splitlines() if line.strip()})
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(source: str) -> None:
    result = lint_source(source, "fuzz.py")
    assert not [d for d in result.diagnostics if d.kind == "internal-error"], result.diagnostics
    for f in result.findings:
        assert f.line is not None and f.line >= 1


@FUZZ
@given(st.text())
def test_random_text_never_crashes(text: str) -> None:
    _check(text)


@FUZZ
@given(st.sampled_from(SNIPPETS), st.integers(0, 10_000), st.integers(0, 40), st.text(max_size=12))
def test_mangled_snippets_never_crash(snippet: str, at: int, cut: int, insert: str) -> None:
    at %= len(snippet) + 1
    _check(snippet[:at] + insert + snippet[at + cut :])


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(LINES), st.integers(0, 3)), max_size=40))
def test_shuffled_statements_never_crash(lines: list[tuple[str, int]]) -> None:
    # Re-indented corpus lines: often valid Python with loops, calls and backward in odd places.
    _check("\n".join("    " * depth + line.strip() for line, depth in lines) + "\n")


PRELUDE = (
    "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
)
ATOMS = [
    "loss = model(x).mean()",
    "loss = loss / accum",
    "logits, loss = model(x, y)",
    "loss.backward()",
    "scaler.scale(loss).backward()",
    "optimizer.step()",
    "scaler.step(optimizer)",
    "optimizer.zero_grad()",
    "scheduler.step()",
    "model.require_backward_grad_sync = last",
    "scaler.unscale_(optimizer)",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    "model = DDP(model, find_unused_parameters=True)",
    "model = torch.compile(model)",
    "sampler = DistributedSampler(ds)",
    "loader = DataLoader(ds, sampler=sampler)",
    "loader = DataLoader(ds, shuffle=True)",
    "print(loss.item())",
    "dist.all_reduce(loss)",
    "x = helper(model, x)",
    "return loss",
    "pass",
    "layer = torch.nn.BatchNorm2d(8)",
    "optimizer = torch.optim.AdamW(model.parameters())",
]
HEADERS = [
    "for i in range(n):",
    "for x in loader:",
    "while cond:",
    "if (i + 1) % accum == 0:",
    "if rank == 0:",
    "with model.no_sync():",
    "with torch.autocast('cuda', dtype=torch.float16):",
    "def helper(model, x):",
    "def train(model, loader, optimizer):",
    "class Trainer:",
    "try:",
]


def _block(depth: int) -> st.SearchStrategy[list[str]]:
    atom = st.sampled_from(ATOMS).map(lambda a: [a])
    if depth == 0:
        return st.lists(atom, min_size=1, max_size=4).map(lambda ls: [x for lines in ls for x in lines])

    def compound(header_body: tuple[str, list[str]]) -> list[str]:
        header, body = header_body
        lines = [header, *("    " + b for b in body)]
        return lines + (["except Exception:", "    pass"] if header == "try:" else [])

    stmt = st.one_of(atom, st.tuples(st.sampled_from(HEADERS), _block(depth - 1)).map(compound))
    return st.lists(stmt, min_size=1, max_size=5).map(lambda ls: [x for lines in ls for x in lines])


@FUZZ
@given(_block(3))
def test_random_valid_training_code_never_crashes(lines: list[str]) -> None:
    source = PRELUDE + "\n".join(lines) + "\n"
    result = lint_source(source, "gen.py")
    assert result.diagnostics == []  # generated code always parses, so every rule really ran
    _check(source)


@FUZZ
@given(st.text(max_size=200))
def test_random_notebook_json_is_rejected_cleanly(text: str) -> None:
    try:
        nb = read_notebook(text)
    except ValueError:
        return
    _check(nb.source)


def test_deeply_nested_code_is_a_diagnostic_not_a_crash() -> None:
    _check("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    _check("".join("    " * i + "if x:\n" for i in range(120)) + "    " * 120 + "loss.backward()\n")
