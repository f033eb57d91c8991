#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a `pagetrace report` page: it parses, every figure is there and
drawn, the heatmap is a valid PNG, and the page is small.  With
--screenshot PNG, also check that a browser's screenshot of it is not
blank.  Prints one line per figure; exit status 1 on any problem.

usage: check_report.py REPORT.html [--screenshot SHOT.png] [--max-bytes N]
"""
import base64
import html.parser
import struct
import sys
import zlib

FIGURES = ("fig-heatmap", "fig-rate", "fig-orders", "fig-lifetime", "fig-cpus")
# Drawn only when the trace has them (reclaimed pages whose allocation it holds).
OPTIONAL = ("fig-reclaim-life",)


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg = None
        self.figs = {}
        self.images = {}
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
            self.figs[self.svg] = {"rect": 0, "path": 0, "text": 0, "image": 0}
        elif self.svg is not None and tag in ("rect", "path", "text", "image"):
            self.figs[self.svg][tag] += 1
            if tag == "image":
                self.images[self.svg] = a.get("href", "")

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None


def png_pixels(data):
    """(width, height, colour type, bytes per pixel, rows) of an 8-bit PNG,
    every filter type undone (Chromium's screenshots use them all)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("no PNG signature")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if zlib.crc32(typ + body) != struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]:
            raise ValueError("bad CRC in %s" % typ)
        if typ == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = ihdr[:4]
    bpp = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype] * depth // 8
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
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
    return w, h, ctype, bpp, rows


def main():
    args = sys.argv[1:]
    shot, max_bytes = None, 2 << 20
    if "--screenshot" in args:
        i = args.index("--screenshot")
        shot = args[i + 1]
        del args[i:i + 2]
    if "--max-bytes" in args:
        i = args.index("--max-bytes")
        max_bytes = int(args[i + 1])
        del args[i:i + 2]
    data = open(args[0], "rb").read()
    bad = []
    if len(data) > max_bytes:
        bad.append("page is %d bytes, more than %d" % (len(data), max_bytes))
    p = Page()
    p.feed(data.decode("utf-8"))
    p.close()
    if "<script" in data.decode("utf-8").lower():
        bad.append("page has a script")
    for f in FIGURES + OPTIONAL:
        c = p.figs.get(f)
        if c is None:
            if f not in OPTIONAL:
                bad.append("%s: missing" % f)
            continue
        print("%s: %d rect, %d path, %d text, %d image" %
              (f, c["rect"], c["path"], c["text"], c["image"]))
        if f == "fig-heatmap":
            href = p.images.get(f, "")
            if not href.startswith("data:image/png;base64,"):
                bad.append("%s: no inline PNG" % f)
                continue
            w, h, _, _, rows = png_pixels(base64.b64decode(href.split(",", 1)[1]))
            used = sum(1 for r in rows for v in r if v)
            print("%s: PNG %dx%d, %d non-free cells" % (f, w, h, used))
            if not used:
                bad.append("%s: heatmap is empty" % f)
        elif f == "fig-rate":
            if c["path"] < 3 + 2:
                bad.append("%s: no lines" % f)
        elif c["rect"] < 1:
            bad.append("%s: no bars" % f)
    if shot:
        w, h, ctype, bpp, rows = png_pixels(open(shot, "rb").read())
        ink = blue = orange = 0
        for r in rows:
            for x in range(0, w * bpp, bpp * 2):
                px = r[x:x + 3]
                if len(px) < 3:
                    continue
                if any(v < 200 for v in px):
                    ink += 1
                # the heatmap's blues and the per-CPU bars' orange
                if px[2] > px[0] + 30:
                    blue += 1
                if px[0] > 200 and 90 < px[1] < 160 and px[2] < 60:
                    orange += 1
        print("screenshot: %dx%d, sampled %d not white, %d blue, %d orange" %
              (w, h, ink, blue, orange))
        if ink < 1000:
            bad.append("screenshot is (nearly) blank")
        if blue < 1000:
            bad.append("screenshot: no heatmap or lines drawn (too few blue pixels)")
        if orange < 100:
            bad.append("screenshot: per-CPU bars not drawn (no orange)")
    for b in bad:
        print("problem: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
