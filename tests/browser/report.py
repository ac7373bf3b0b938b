#!/usr/bin/env python3
"""The report page in a real browser: renders the page of a fixture
(a fine-tune against its base, so every section is there) in headless
Chromium and fails on any console message (the page has no script, so a
message is an error: a blocked fetch, a bad style), on a blank screenshot,
or on a section or picture missing from the DOM Chromium built.

    tests/browser/report.py [--embscope BIN] [--chromium BIN] [--keep DIR]

Standard library only. Exit 0 when the page passes, 1 when it does not,
2 when it cannot run (no browser, no binary).
"""

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTIONS = ["summary", "check", "undertrained", "diff", "map"]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def chromium(binary, profile, *args):
    """Runs the browser on `args` with a fresh profile; returns its output."""
    cmd = [binary, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def console_messages(stderr):
    """The page's console messages in the browser's log."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def png_colours(path, enough=64):
    """Distinct pixel colours of the PNG at `path`, counted until `enough`
    are found (a page of text and pictures finds them in its first rows)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    at, idat, header = 8, [], None
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        at += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"{path}: expected 8-bit RGB or RGBA, not interlaced")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    seen = set()
    for y in range(height):
        row = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        kind, cur = row[0], bytearray(row[1:])
        for i in range(stride):
            a = cur[i - bpp] if i >= bpp else 0
            b = prev[i]
            if kind == 1:
                cur[i] = (cur[i] + a) & 255
            elif kind == 2:
                cur[i] = (cur[i] + b) & 255
            elif kind == 3:
                cur[i] = (cur[i] + ((a + b) >> 1)) & 255
            elif kind == 4:
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (cur[i] + pred) & 255
        for x in range(0, stride, bpp):
            seen.add(bytes(cur[x : x + bpp]))
        if len(seen) >= enough:
            break
        prev = cur
    return len(seen)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embscope", default=os.path.join(ROOT, "target", "debug", "embscope"))
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    ap.add_argument("--keep", help="write the page and the screenshot into this directory")
    args = ap.parse_args()
    for tool in (args.embscope, args.chromium):
        if not shutil.which(tool):
            print(f"report.py: cannot run `{tool}`", file=sys.stderr)
            return 2
    work = tempfile.mkdtemp(prefix="embscope-browser-")
    out = args.keep or work
    os.makedirs(out, exist_ok=True)
    page, shot = os.path.join(out, "report.html"), os.path.join(out, "report.png")
    fixtures = os.path.join(ROOT, "fixtures", "diff")
    made = subprocess.run(
        [args.embscope, "report", os.path.join(fixtures, "tuned"),
         "--base", os.path.join(fixtures, "base"), "-o", page],
        capture_output=True, text=True,
    )
    if made.returncode != 0:
        print(f"report.py: embscope report failed: {made.stderr.strip()}", file=sys.stderr)
        return 1
    url = "file://" + page
    failures = []
    dom = chromium(args.chromium, os.path.join(work, "a"), "--dump-dom", url)
    shot_run = chromium(
        args.chromium, os.path.join(work, "b"), f"--screenshot={shot}", "--window-size=1200,3000", url
    )
    for run in (dom, shot_run):
        failures += [f"console: {m}" for m in console_messages(run.stderr)]
    if dom.returncode != 0 or not dom.stdout.strip():
        failures.append(f"--dump-dom failed ({dom.returncode}): {dom.stderr[-400:]}")
    # The DOM Chromium built: each section, with a picture inside it.
    parts = re.split(r'(?=<section id=")', dom.stdout)
    for name in SECTIONS:
        part = next((p for p in parts if p.startswith(f'<section id="{name}"')), None)
        if part is None:
            failures.append(f"section `{name}` is missing")
        elif "<svg" not in part.split("</section>")[0]:
            failures.append(f"section `{name}` has no <svg>")
    if not os.path.exists(shot):
        failures.append(f"no screenshot: {shot_run.stderr[-400:]}")
    else:
        colours = png_colours(shot)
        if colours < 8:
            failures.append(f"the screenshot is blank ({colours} colours)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print(f"report.py: {f}", file=sys.stderr)
    if not failures:
        print(f"report.py: the page renders in {args.chromium}: {len(SECTIONS)} sections, each with a picture, no console message")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
