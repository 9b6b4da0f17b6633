"""The HTML report opens in headless Chromium without console errors and renders a non-blank page.

Needs Debian's `chromium` (/usr/bin/chromium); skipped with the reason when it is absent.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from ddp_doctor.report.command import write_report

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Chromium not installed (apt-get install -y chromium)"
)
MIN_COLOURS = 20  # text, table borders, coloured verdicts and plot lines: far more than a blank page


def png_pixels(data: bytes) -> list[bytes]:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG into rows of raw pixel bytes (PNG spec §9)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return [bytes(r[i : i + 3]) for r in rows for i in range(0, len(r), bpp)]


def _open(page: Path, shot: Path, profile: Path) -> str:
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1000,1200",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.stderr


def _console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]


def test_console_error_detection_works(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body>x<script>undefinedFunction();</script></body></html>")
    errors = _console_errors(_open(page, tmp_path / "bad.png", tmp_path / "p0"))
    assert any("Uncaught" in e for e in errors)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_html_report_renders_without_console_errors(make_run, tmp_path, lang):
    run = make_run(level="full", faults=("loss-spike", "grad-spike", "sched-per-micro", "fp16-overflow"))
    page = tmp_path / "report.html"
    write_report(run, "html", page, lang)
    shot = tmp_path / "shot.png"
    stderr = _open(page, shot, tmp_path / "p1")
    assert _console_errors(stderr) == []
    colours = set(png_pixels(shot.read_bytes()))
    assert len(colours) >= MIN_COLOURS, f"screenshot looks blank: {len(colours)} colours"
