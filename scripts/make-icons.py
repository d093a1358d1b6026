#!/usr/bin/env python3
"""Draws the site's PNG icons (static/icon-32.png, static/icon-180.png, static/icon-512.png)
from the same design as static/favicon.svg: a green rounded square with three rising bars.
Standard library only (zlib). Run once when the design changes; the PNGs are committed."""
import struct
import sys
import zlib
from pathlib import Path

GREEN = (0x00, 0x6D, 0x2C, 255)
BAR = (0xED, 0xF8, 0xFB, 255)
CLEAR = (0, 0, 0, 0)
# In the SVG's 16-unit square: corner radius 3; bars (x, y, w, h).
BARS = [(3, 9, 2, 4), (7, 6, 2, 7), (11, 3, 2, 10)]


def pixel(size, px, py):
    # Sample the centre of the pixel in 16-unit coordinates.
    x, y = (px + 0.5) * 16 / size, (py + 0.5) * 16 / size
    r = 3.0
    cx, cy = min(max(x, r), 16 - r), min(max(y, r), 16 - r)
    if (x - cx) ** 2 + (y - cy) ** 2 > r * r:
        return CLEAR
    for bx, by, bw, bh in BARS:
        if bx <= x < bx + bw and by <= y < by + bh:
            return BAR
    return GREEN


def png(size):
    rows = b"".join(b"\0" + bytes(c for px in range(size) for c in pixel(size, px, py)) for py in range(size))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "static")
for size in (32, 180, 512):
    (out / f"icon-{size}.png").write_bytes(png(size))
    print(f"wrote {out / f'icon-{size}.png'}")
