"""Area `reader`: damaged, hostile and live run directories, and imported logs, given to `report`."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .harness import (
    Config,
    Expect,
    Try,
    _open_to_nobody,
    _rmtree,
    all_not_measured,
    base_env,
    deep,
    edit,
    edit_manifest,
    execute,
    judge,
    no_confirmed,
    not_clean_exit,
    problem_mentions,
    put,
    rank_path,
    reader_check,
    records_of,
    set_field,
    steps_json,
    usable_rank,
)


def reader_classes(base: Path, cfg: Config) -> list[tuple[str, Callable[[Path], None], Expect]]:
    """(name, damage applied to a copy of a real run, expectation). The classes of issue 10 item 5 and
    more an outside tester tries."""
    n_steps = sum(1 for r in records_of(rank_path(base, 0)) if r.get("kind") == "step")
    damaged, data_ok = Expect(), Expect(problem=None)
    maybe_not_a_run = Expect(frozenset({0, 2}))

    def header_only(run: Path) -> None:
        for r in (0, 1):
            put(rank_path(run, r), records_of(rank_path(run, r))[:1])

    def empty(which: tuple[int, ...]) -> Callable[[Path], None]:
        return lambda run: [rank_path(run, r).write_bytes(b"") for r in which] and None

    def live_before_first_step(run: Path) -> None:
        edit_manifest(run, lambda m: {k: v for k, v in m.items() if k not in ("end", "exit_code", "ranks")})
        for r in (0, 1):
            recs = records_of(rank_path(run, r))
            put(
                rank_path(run, r),
                recs[: next(i for i, x in enumerate(recs) if x["kind"] in ("step", "update"))],
            )

    def in_progress(run: Path) -> None:
        edit_manifest(run, lambda m: {k: v for k, v in m.items() if k not in ("end", "exit_code", "ranks")})
        for r in (0, 1):
            recs = records_of(rank_path(run, r))
            put(rank_path(run, r), recs[: len(recs) // 2])

    def fifo(rel: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            p = run / rel
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            os.mkfifo(p)

        return damage

    def link(rel: str, target: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            p = run / rel
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            p.symlink_to(target)

        return damage

    def loop2(run: Path) -> None:
        a, b = rank_path(run, 1), run / "ranks" / "other.jsonl"
        a.unlink()
        a.symlink_to(b.name)
        b.symlink_to(a.name)

    def as_dir(rel: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            p = run / rel
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            (p / "x").mkdir(parents=True)

        return damage

    def ranks_is_file(run: Path) -> None:
        shutil.rmtree(run / "ranks")
        (run / "ranks").write_text("not a directory\n")

    def unreadable(rel: str) -> Callable[[Path], None]:
        return lambda run: (run / rel).chmod(0)

    def deep_losses(n: int) -> Callable[[Path], None]:
        return set_field_raw("step", "losses", deep(n))

    def set_field_raw(kind: str, key: str, raw: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            seen = [False]

            def fn(rec: dict) -> object:
                if seen[0]:
                    return rec
                seen[0] = True
                return json.dumps(dict(rec, **{key: "__RAW__"})).replace('"__RAW__"', raw)

            edit(run, fn, ranks=(0,), kinds=(kind,))

        return damage

    def dup_steps(run: Path) -> None:
        edit(run, lambda r: [r, r], kinds=("step",))

    def whole_file_twice(run: Path) -> None:
        p = rank_path(run, 1)
        p.write_bytes(p.read_bytes() * 2)

    def header_says(which: int, **kw: object) -> Callable[[Path], None]:
        return lambda run: edit(run, lambda r: dict(r, **kw), ranks=(which,), kinds=("header",))

    def extra_rank(name: str) -> Callable[[Path], None]:
        return lambda run: shutil.copy(rank_path(run, 1), run / "ranks" / name)

    def short_rank(run: Path) -> None:
        recs = records_of(rank_path(run, 1))
        put(rank_path(run, 1), [r for r in recs if r["kind"] != "end"][: len(recs) // 2])

    def sigkilled(code: int) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            short_rank(run)
            edit_manifest(run, lambda m: dict(m, exit_code=code))

        return damage

    def string_losses(run: Path) -> None:
        edit(
            run, lambda r: dict(r, losses=["abc"] * len(r.get("losses") or [0])), ranks=(0,), kinds=("step",)
        )

    def delete(rel: str) -> Callable[[Path], None]:
        return lambda run: shutil.rmtree(run / rel) if (run / rel).is_dir() else (run / rel).unlink()

    def truncate_last(run: Path) -> None:
        p = rank_path(run, 0)
        p.write_bytes(p.read_bytes()[:-40])

    def crlf(run: Path) -> None:
        for r in (0, 1):
            p = rank_path(run, r)
            p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))

    def prefix(rel: str, data: bytes) -> Callable[[Path], None]:
        return lambda run: (run / rel).write_bytes(data + (run / rel).read_bytes())

    def suffix(rel: str, data: bytes) -> Callable[[Path], None]:
        return lambda run: (run / rel).write_bytes((run / rel).read_bytes() + data)

    def long_line(n: int) -> Callable[[Path], None]:
        return suffix("ranks/rank-00000.jsonl", b'{"kind": "note", "pad": "' + b"x" * n + b'"}\n')

    def many_losses(n: int) -> Callable[[Path], None]:
        return set_field_raw("step", "losses", "[" + ",".join(["1.5"] * n) + "]")

    def many_rank_files(n: int) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            head = records_of(rank_path(run, 1))[0]
            for r in range(2, n):
                put(rank_path(run, r), [dict(head, rank=r)])

        return damage

    def junk_files(n: int) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            for i in range(n):
                (run / "ranks" / f"junk-{i}.txt").write_text("x")

        return damage

    def manifest_raw(text: str) -> Callable[[Path], None]:
        return lambda run: (run / "manifest.json").write_text(text)

    def manifest_field(key: str, value: object) -> Callable[[Path], None]:
        return lambda run: edit_manifest(run, lambda m: dict(m, **{key: value}))

    def all_fields_null(run: Path) -> None:
        seen = [0]

        def fn(rec: dict) -> dict:
            seen[0] += 1
            return {k: (v if k == "kind" else None) for k, v in rec.items()} if seen[0] == 3 else rec

        edit(run, fn, ranks=(0,), kinds=("step",))

    def big_run(copies: int) -> Callable[[Path], None]:
        """A long real run: the step records repeated with new step numbers (cache path, > 4 MB)."""

        def damage(run: Path) -> None:
            for r in (0, 1):
                recs = records_of(rank_path(run, r))
                steps = [x for x in recs if x["kind"] == "step"]
                head = [x for x in recs if x["kind"] not in ("step", "end")]
                out = head + [dict(s, step=k * len(steps) + s["step"]) for k in range(copies) for s in steps]
                put(rank_path(run, r), out)

        return damage

    def sparse(size: int) -> Callable[[Path], None]:
        """A rank file preallocated to `size` bytes (a file system after a crash): holes read as NUL."""
        return lambda run: os.truncate(rank_path(run, 1), size)

    def exits_file(text: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            (run / "launcher").mkdir(exist_ok=True)
            (run / "launcher" / "exits-vm-1-1.json").write_text(text)

        return damage

    def metrics(text: str) -> Callable[[Path], None]:
        def damage(run: Path) -> None:
            (run / "trainer").mkdir(exist_ok=True)
            (run / "trainer" / "metrics.jsonl").write_text(text)

        return damage

    step_dict_nesting = "{" + '"a":{' * 50000 + "}" * 50000 + "}"
    classes: list[tuple[str, Callable[[Path], None], Expect]] = [
        ("pristine", lambda run: None, Expect(problem=False, json_check=steps_json(n_steps))),
        ("header-only", header_only, Expect(json_check=all_not_measured)),
        ("empty-rank-files", empty((0, 1)), maybe_not_a_run),
        ("one-empty-rank-file", empty((1,)), damaged),
        ("live-before-first-step", live_before_first_step, Expect(problem=None, json_check=all_not_measured)),
        ("live-half-way", in_progress, Expect(problem=None)),
        ("fifo-rank-file", fifo("ranks/rank-00001.jsonl"), damaged),
        ("fifo-manifest", fifo("manifest.json"), damaged),
        ("fifo-ranks-dir", fifo("ranks"), maybe_not_a_run),
        ("symlink-loop-rank", loop2, damaged),
        ("symlink-self-loop-manifest", link("manifest.json", "manifest.json"), damaged),
        ("symlink-ranks-dir-to-itself", link("ranks", "ranks"), maybe_not_a_run),
        ("rank-file-is-dev-zero", link("ranks/rank-00001.jsonl", "/dev/zero"), damaged),
        ("rank-file-is-dev-urandom", link("ranks/rank-00001.jsonl", "/dev/urandom"), damaged),
        ("manifest-is-dev-zero", link("manifest.json", "/dev/zero"), damaged),
        ("manifest-is-etc-passwd", link("manifest.json", "/etc/passwd"), damaged),
        ("rank-file-links-to-a-dir", link("ranks/rank-00001.jsonl", "/"), damaged),
        ("directory-as-rank-file", as_dir("ranks/rank-00001.jsonl"), damaged),
        ("directory-as-manifest", as_dir("manifest.json"), damaged),
        ("ranks-is-a-file", ranks_is_file, maybe_not_a_run),
        ("deep-json-losses-100k", deep_losses(100_000), damaged),
        ("deep-json-manifest-100k", manifest_raw(deep(100_000)), damaged),
        ("deep-json-object-50k", set_field_raw("config", "module", step_dict_nesting), data_ok),
        ("deep-json-500", deep_losses(500), data_ok),
        ("step-1e30", set_field("step", "step", 1e30), damaged),
        ("step-2^62", set_field("step", "step", 2**62), damaged),
        ("step-negative", set_field("step", "step", -5), damaged),
        ("world-size-1e9", header_says(0, world_size=10**9), damaged),
        ("world-size-2^62-float", header_says(1, world_size=4.6e18), damaged),
        ("world-size-zero", header_says(0, world_size=0), damaged),
        ("micro-steps-1e9", set_field("step", "micro_steps", 10**9), damaged),
        ("micro-steps-negative", set_field("step", "micro_steps", -3), damaged),
        ("int-with-5000-digits", set_field_raw("step", "dt", "9" * 5000), damaged),
        ("float-1e400", set_field_raw("step", "dt", "1e400"), data_ok),
        ("nan-literals", set_field_raw("step", "losses", "[NaN, Infinity, -Infinity]"), data_ok),
        ("step-as-string", set_field("step", "step", "3"), damaged),
        ("step-as-bool", set_field("step", "step", True), damaged),
        ("kind-not-a-string", set_field("step", "kind", 5), damaged),
        ("kind-a-list", set_field("step", "kind", ["step"]), damaged),
        ("record-is-an-array", lambda run: edit(run, lambda r: "[1, 2, 3]", ranks=(0,), kinds=("update",)), damaged),
        ("record-is-a-string", lambda run: edit(run, lambda r: '"step"', ranks=(1,), kinds=("replica",)), damaged),
        ("losses-a-dict", set_field("step", "losses", {"a": 1}), damaged),
        ("losses-a-string", set_field("step", "losses", "0.5,0.6"), damaged),
        ("all-fields-null", all_fields_null, damaged),
        ("lists-shorter-than-micro-steps", set_field("step", "samples", [1]), Expect(problem=None)),
        ("many-losses-200k", many_losses(200_000), Expect(problem=None)),
        ("header-rank-string", header_says(0, rank="0"), damaged),
        ("header-world-size-2.5", header_says(0, world_size=2.5), damaged),
        ("header-every-zero", header_says(0, every=0), Expect(problem=None)),
        ("manifest-env-a-list", manifest_field("env", ["A=1"]), damaged),
        ("manifest-command-a-string", manifest_field("command", "python train.py"), damaged),
        ("manifest-command-a-dict", manifest_field("command", {"a": [1]}), damaged),
        ("manifest-versions-a-list", manifest_field("versions", [1, 2]), damaged),
        ("manifest-exit-code-1e30", manifest_field("exit_code", 1e30), damaged),
        ("manifest-every-zero", manifest_field("every", 0), Expect(problem=None)),
        ("manifest-ranks-1e9", manifest_field("ranks", 10**9), damaged),
        ("manifest-a-list", manifest_raw("[]"), damaged),
        ("manifest-null", manifest_raw("null"), damaged),
        ("manifest-empty", manifest_raw(""), damaged),
        ("manifest-truncated", lambda run: manifest_raw((run / "manifest.json").read_text()[:60])(run), damaged),
        ("manifest-missing", delete("manifest.json"), damaged),
        ("schema-run-10", manifest_field("schema", "ddp-doctor.run/10"), Expect(json_check=problem_mentions("schema"))),
        ("schema-rank-10", header_says(0, schema="ddp-doctor.rank/10"), Expect(json_check=problem_mentions("schema"))),
        ("schema-garbage", manifest_field("schema", "garbage"), damaged),
        ("schema-a-number", header_says(1, schema=1), damaged),
        ("duplicate-steps", dup_steps, Expect(json_check=steps_json(n_steps))),
        ("rank-file-written-twice", whole_file_twice, Expect(json_check=steps_json(n_steps))),
        ("header-rank-mismatch", header_says(1, rank=0), damaged),
        ("headers-disagree-world-size", header_says(1, world_size=3), damaged),
        ("rank-beyond-world-size", extra_rank("rank-00007.jsonl"), damaged),
        ("two-names-for-one-rank", extra_rank("rank-1.jsonl"), damaged),
        ("short-rank-without-end", short_rank, Expect(json_check=problem_mentions("1"))),
        ("sigkilled-rank", sigkilled(-9), Expect(json_check=not_clean_exit)),
        ("sigkilled-rank-exit-1", sigkilled(1), Expect(json_check=not_clean_exit)),
        ("string-losses", string_losses, Expect(json_check=no_confirmed("nonfinite", "non-finite"))),
        ("missing-rank-1", delete("ranks/rank-00001.jsonl"), damaged),
        ("missing-ranks-dir", delete("ranks"), maybe_not_a_run),
        ("truncated-last-line", truncate_last, damaged),
        ("crlf-line-endings", crlf, Expect(problem=None, json_check=steps_json(n_steps))),
        ("utf8-bom", prefix("ranks/rank-00000.jsonl", b"\xef\xbb\xbf"), Expect(problem=None)),
        ("nul-block-after-crash", suffix("ranks/rank-00000.jsonl", b"\0" * 65536), damaged),
        ("invalid-utf8-line", suffix("ranks/rank-00001.jsonl", b'{"kind": "step", "x": "\xff\xfe"}\n'), data_ok),
        ("blank-lines", suffix("ranks/rank-00001.jsonl", b"\n\n   \n"), data_ok),
        ("unknown-kind", suffix("ranks/rank-00001.jsonl", b'{"kind": "zzz", "step": 1}\n'), Expect(problem=False)),
        ("long-line-8MB", long_line(8 * 2**20), data_ok),
        ("rank-files-300", many_rank_files(300), damaged),
        ("junk-files-2000", junk_files(2000), Expect(problem=None)),
        ("exits-file-garbage", exits_file("{not json"), damaged),
        ("exits-file-wrong-types", exits_file('{"failures": [1, 2], "host": 5}'), damaged),
        ("exits-file-deep", exits_file('{"failures": ' + deep(100_000, "{\"a\":", "}") + "}"), damaged),
        ("metrics-string-values", metrics('{"step": "x", "loss": "abc"}\n{"step": 1e308, "loss": [1]}\n'), Expect(problem=None)),
        ("metrics-deep", metrics(deep(100_000) + "\n"), Expect(problem=None)),
    ]  # fmt: skip
    if not cfg.quick:
        classes += [
            ("big-run-cached", big_run(200), Expect(problem=False)),
            ("unreadable-rank-file", unreadable("ranks/rank-00001.jsonl"), damaged),
            ("unreadable-manifest", unreadable("manifest.json"), damaged),
            ("sparse-4GiB-of-nul-after-crash", sparse(4 << 30), damaged),
        ]
    if cfg.quick:
        classes = [c for c in classes if c[0] in QUICK_READER]
    classes += random_damage_classes(cfg)
    return classes


def random_damage_classes(cfg: Config) -> list[tuple[str, Callable[[Path], None], Expect]]:
    """Byte-level damage at random places of the real run's files (the line-parser oracle decides
    whether a problem must be listed)."""
    rng = random.Random(cfg.seed)
    out: list[tuple[str, Callable[[Path], None], Expect]] = []
    ops = ("flip", "truncate", "zero-range", "insert", "drop-line", "dup-line", "swap-lines", "splice")
    for i in range(3 if cfg.quick else 60):
        seed = rng.randrange(2**31)
        kinds = [rng.choice(ops) for _ in range(rng.randint(1, 3))]

        def damage(run: Path, seed: int = seed, kinds: list[str] = kinds) -> None:
            r = random.Random(seed)
            files = [run / "manifest.json", rank_path(run, 0), rank_path(run, 1)]
            for op in kinds:
                p = r.choice(files)
                data = bytearray(p.read_bytes())
                if not data:
                    continue
                at = r.randrange(len(data))
                lines = data.split(b"\n")
                if op == "flip":
                    for _ in range(r.randint(1, 8)):
                        data[r.randrange(len(data))] ^= 1 << r.randrange(8)
                elif op == "truncate":
                    del data[at:]
                elif op == "zero-range":
                    data[at : at + r.randint(1, 4096)] = b"\0" * len(data[at : at + 4096])
                elif op == "insert":
                    data[at:at] = bytes(r.randrange(256) for _ in range(r.randint(1, 64)))
                elif op in ("drop-line", "dup-line", "swap-lines") and len(lines) > 2:
                    k = r.randrange(len(lines) - 1)
                    if op == "drop-line":
                        del lines[k]
                    elif op == "dup-line":
                        lines.insert(k, lines[k])
                    else:
                        j = r.randrange(len(lines) - 1)
                        lines[k], lines[j] = lines[j], lines[k]
                    data = bytearray(b"\n".join(lines))
                elif op == "splice":  # a piece of one file lands in the middle of another (a torn write)
                    q = r.choice(files).read_bytes()
                    a = r.randrange(len(q) or 1)
                    data[at:at] = q[a : a + r.randint(1, 512)]
                p.write_bytes(bytes(data))

        out.append((f"random-{i:02d}-{'+'.join(kinds)}", damage, Expect(frozenset({0, 2}), problem=None)))
    return out


def reader_tries(base: Path, cfg: Config) -> list[Try]:
    root = cfg.work / "reader"
    root.mkdir(parents=True, exist_ok=True)
    tries: list[Try] = []
    for name, damage, exp in reader_classes(base, cfg):
        run = root / name
        shutil.copytree(base, run, symlinks=True)
        try:
            damage(run)
        except FileNotFoundError:  # a class for rank 1 on a one-process run: not applicable
            _rmtree(run)
            continue
        nobody = name.startswith("unreadable")
        if nobody:
            _open_to_nobody(run, keep=(run / "ranks" / "rank-00001.jsonl", run / "manifest.json"))
        codes = exp.codes
        if exp.codes == frozenset({0, 2}) and usable_rank(run):
            codes = frozenset({0})  # the run still has a header and steps: it must be reported
        fmts = ("text", "json", "html") if not cfg.quick or name in QUICK_ALL_FORMATS else ("json",)
        for fmt in fmts:
            out = root / f"{name}.{fmt}.out.html" if fmt == "html" else None
            argv = ["report", str(run), "--format", fmt] + (["--output", str(out)] if out else [])
            slow = ("big-run-cached", "long-line-8MB", "rank-files-300", "sparse-4GiB-of-nul-after-crash")
            timeout = 120 if name in slow else None
            tries.append(Try("reader", f"{name} [{fmt}]", argv, root, codes, reader_check(run, fmt, exp, out),
                             timeout=timeout, as_nobody=nobody))  # fmt: skip
        if name == "big-run-cached":  # once more, read from its column cache, then with the cache damaged
            tries.append(Try("reader", f"{name} [json, from cache]", ["report", str(run), "--format", "json"], root,
                             frozenset({0}), reader_check(run, "json", exp, None), timeout=120))  # fmt: skip
    return tries


# --quick: the CI subset — one representative of every class of issue 10 item 5
QUICK_ALL_FORMATS = ("pristine", "header-only", "fifo-rank-file")
QUICK_READER = (
    *QUICK_ALL_FORMATS,
    "empty-rank-files",
    "live-before-first-step",
    "fifo-manifest",
    "symlink-loop-rank",
    "rank-file-is-dev-zero",
    "directory-as-rank-file",
    "deep-json-losses-100k",
    "step-2^62",
    "world-size-1e9",
    "micro-steps-1e9",
    "int-with-5000-digits",
    "kind-not-a-string",
    "manifest-env-a-list",
    "schema-run-10",
    "duplicate-steps",
    "header-rank-mismatch",
    "rank-beyond-world-size",
    "sigkilled-rank",
    "string-losses",
    "nul-block-after-crash",
    "exits-file-garbage",
)


def _start_trainer_run(out: Path, steps: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "ddp_doctor.cli", "run", "--out", str(out), "--", sys.executable, "-m",
           "torch.distributed.run", "--nproc_per_node", "2", "-m", "ddp_doctor.trainer", "--preset", "tiny",
           "--steps", str(steps), "--no-progress"]  # fmt: skip
    return subprocess.Popen(cmd, env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


def _step_lines(p: Path) -> int:
    try:
        return p.read_bytes().count(b'"kind":"step"')
    except OSError:
        return 0


def _live_polls(t: Try, cfg: Config) -> list[str]:
    """`report` polled again and again on a real run from before its first step to its end: every
    poll exits 0 (or 2 while no rank file exists yet) without a traceback."""
    out = t.cwd / "live"
    proc = _start_trainer_run(out, 20)
    fails: list[str] = []
    polls = 0
    try:
        while proc.poll() is None and polls < 60:
            o = execute(["report", str(out), "--format", "json"], t.cwd, cfg)
            polls += 1
            fails += [
                f"poll {polls}: {f}" for f in judge(Try("reader", "", [], t.cwd, frozenset({0, 2})), o, cfg)
            ]
            if o.code == 0:
                json.loads(o.stdout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    o = execute(["report", str(out), "--format", "json"], t.cwd, cfg)
    fails += judge(
        Try(
            "reader",
            "",
            [],
            t.cwd,
            frozenset({0}),
            check=reader_check(out, "json", Expect(problem=None), None),
        ),
        o,
        cfg,
    )
    t.name = f"{t.name} ({polls} polls)"
    return fails


def _sigkilled_rank(t: Try, cfg: Config) -> list[str]:
    """A real rank SIGKILLed mid-run: the report must not call the run clean."""
    out = t.cwd / "killed"
    proc = _start_trainer_run(out, 400)
    try:
        rank1 = out / "ranks" / "rank-00001.jsonl"
        deadline = time.monotonic() + 240
        while _step_lines(rank1) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        pid = json.loads(rank1.read_bytes().split(b"\n")[0])["pid"]
        os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    fails: list[str] = []
    for fmt in ("json", "text"):
        o = execute(["report", str(out), "--format", fmt], t.cwd, cfg)
        check = reader_check(out, fmt, Expect(json_check=not_clean_exit), None)
        fails += judge(Try("reader", "", [], t.cwd, frozenset({0}), check=check), o, cfg)
    return fails


# --- imported logs (report accepts trainer_state.json, TensorBoard, W&B offline) ---------------------------


def import_tries(cfg: Config) -> list[Try]:
    root = cfg.work / "imports"
    root.mkdir(parents=True, exist_ok=True)
    cases = {
        "trainer_state-deep": deep(100_000),
        "trainer_state-wrong-types": '{"log_history": [1, "x", null, {"loss": "abc", "step": [1]}], "global_step": "9"}',
        "trainer_state-huge-steps": '{"log_history": [{"loss": 1.0, "step": 1e308}, {"loss": 2.0, "step": 99999999999999999999}]}',
        "trainer_state-log-history-dict": '{"log_history": {"a": 1}}',
        "trainer_state-not-json": "\x00\x01garbage",
        "trainer_state-empty": "",
    }
    tries = []
    for name, text in cases.items():
        d = root / name
        d.mkdir()
        (d / "trainer_state.json").write_text(text)
        tries.append(
            Try(
                "reader",
                f"import {name}",
                ["report", str(d / "trainer_state.json"), "--format", "json"],
                root,
            )
        )
    fifo = root / "trainer_state-fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "trainer_state.json")
    tries.append(
        Try("reader", "import trainer_state.json that is a FIFO", ["report", str(fifo)], root, frozenset({2}))
    )
    ev = root / "tb-garbage"
    ev.mkdir()
    (ev / "events.out.tfevents.1.host").write_bytes(random.Random(cfg.seed).randbytes(20000))
    tries.append(
        Try(
            "reader",
            "import tensorboard events of random bytes",
            ["report", str(ev), "--format", "json"],
            root,
        )
    )
    ev2 = root / "tb-fifo"
    ev2.mkdir()
    os.mkfifo(ev2 / "events.out.tfevents.2.host")
    tries.append(Try("reader", "import tensorboard event file that is a FIFO", ["report", str(ev2)], root))
    wb = root / "wandb" / "offline-run-20260101_000000-abc"
    (wb / "files").mkdir(parents=True)
    (wb / "run-abc.wandb").write_bytes(b"\xff" * 1000)
    (wb / "files" / "wandb-summary.json").write_text(deep(50_000))
    tries.append(
        Try("reader", "import wandb offline run of garbage", ["report", str(wb), "--format", "json"], root)
    )
    return tries if not cfg.quick else tries[:2]
