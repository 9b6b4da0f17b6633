"""Fill the local cache that ``bench/lint_real.py`` reads: what lint reads of every corpus repository
at its pinned commit, under ``<cache>/<owner>+<name>/<commit>/``.

Sources, tried in order for each repository:
  1. the cache itself (already there: nothing to do);
  2. ``--mirrors DIR``: git directories laid out as ``DIR/<owner>+<name>/repo`` (bare, e.g. from a
     code-search snapshot), read with ``git archive <commit>``;
  3. ``--clone``: ``git clone --filter=blob:none`` from GitHub, then ``git archive`` (needs network).
Extracted: what ``ddp-doctor lint`` reads in a checkout (``*.py``, ``*.pyi``, ``*.ipynb``, ``.gitignore``,
the shipped YAML configurations) and the shipped shell launch scripts (``*.sh``), files other than
Python up to ``MAX_OTHER_BYTES``. Before 2026-12-07 only ``*.py`` was extracted, so the option values
lint reads from YAML configurations and launch scripts were never seen by the scorer; a cache folder
without ``MARKER`` (or with another list) is extracted again. Nothing from the cache belongs in this
repository.

    python bench/lint_real_fetch.py --cache /work/lintcache --mirrors /work/.mirror
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import tomllib

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "lint" / "real" / "corpus.toml"
SUFFIXES = (".py", ".pyi", ".ipynb", ".yaml", ".yml", ".sh", ".gitignore")
MAX_OTHER_BYTES = 2_000_000  # a notebook with images, a dataset listing in YAML: not configuration
MARKER = ".lint-real-cache"  # written last, holding SUFFIXES: the folder is complete for that list


def _wanted(line: str) -> str | None:
    """A ``git ls-tree -r -l -z`` entry -> its path when the cache keeps the file."""
    meta, _, name = line.partition("\t")
    parts = meta.split()
    if len(parts) != 4 or parts[1] != "blob" or not name.endswith(SUFFIXES):
        return None
    if not name.endswith(".py") and (not parts[3].isdigit() or int(parts[3]) > MAX_OTHER_BYTES):
        return None
    return name


def extract(git_dir: Path, commit: str, dest: Path) -> bool:
    names = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-l", "-z", commit],
        capture_output=True,
        text=True,
    )
    if names.returncode != 0:
        return False
    wanted = [n for line in names.stdout.split("\0") if (n := _wanted(line)) is not None]
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", commit, "--", *wanted], capture_output=True
    )
    if archive.returncode != 0:
        # A snapshot can lack some blobs (large files, partial clones): `git archive` then fails as a
        # whole, so take the .py files one by one and skip the missing ones.
        return _extract_each(git_dir, commit, wanted, dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        for member in tar.getmembers():
            if (
                member.isfile()
                and not member.name.startswith(("/", ".."))
                and ".." not in Path(member.name).parts
            ):
                tar.extract(member, dest, filter="data")
    return True


def _extract_each(git_dir: Path, commit: str, names: list[str], dest: Path) -> bool:
    got = 0
    for name in names:
        if name.startswith("/") or ".." in Path(name).parts:
            continue
        blob = subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"{commit}:{name}"], capture_output=True
        )
        if blob.returncode != 0:
            continue
        out = dest / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(blob.stdout)
        got += 1
    return got > 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--mirrors", type=Path)
    ap.add_argument("--clone", action="store_true", help="clone missing repositories from GitHub")
    args = ap.parse_args(argv)
    with args.corpus.open("rb") as fh:
        scripts = tomllib.load(fh)["script"]
    missing = 0
    for repo, commit in sorted({(s["repo"], s["commit"]) for s in scripts}):
        dest = args.cache / repo.replace("/", "+") / commit
        marker = dest / MARKER
        if marker.is_file() and marker.read_text() == " ".join(SUFFIXES):
            continue
        done = False
        if args.mirrors:
            git_dir = args.mirrors / repo.replace("/", "+") / "repo"
            if (git_dir / ".git").is_dir():  # a snapshot laid out as a work tree's .git
                git_dir = git_dir / ".git"
            done = git_dir.is_dir() and extract(git_dir, commit, dest)
        if not done and args.clone:
            with tempfile.TemporaryDirectory() as tmp:
                clone = subprocess.run(
                    ["git", "clone", "--bare", "--filter=blob:none", f"https://github.com/{repo}", tmp],
                    capture_output=True,
                )
                done = clone.returncode == 0 and extract(Path(tmp), commit, dest)
        if done:
            marker.write_text(" ".join(SUFFIXES))
        print(f"{'ok  ' if done else 'MISS'} {repo}@{commit[:10]}")
        missing += not done
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
