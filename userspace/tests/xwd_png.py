#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn an `xwd -root` screenshot (24-bit TrueColor, 32 bits a pixel) into
a PNG, and count its colourful pixels, for tests/tracecmd-roundtrip.sh.

  xwd_png.py SHOT.xwd SHOT.png [X Y W H]

Prints "colourful N": pixels of the rectangle (default: all) whose
channels differ by more than 60, that is neither grey, white nor black.
An empty KernelShark window has a few thousand (its buttons); the CPU
rows and the list of a loaded trace add tens of thousands.
"""
import struct
import sys
import zlib


def main():
    data = open(sys.argv[1], 'rb').read()
    hdr = struct.unpack('>25I', data[:100])
    size, depth, width, height = hdr[0], hdr[3], hdr[4], hdr[5]
    lsb_first, bpl, ncolors = hdr[7] == 0, hdr[12], hdr[19]
    if depth != 24 or bpl < 4 * width:
        sys.exit('%s: depth %d, %d bytes a line: not a 32-bit TrueColor dump'
                 % (sys.argv[1], depth, bpl))
    x0, y0, w, h = (int(v) for v in sys.argv[3:7]) if len(sys.argv) > 3 else (0, 0, width, height)
    pix = data[size + 12 * ncolors:]
    rows, colourful = [], 0
    for y in range(height):
        line = pix[y * bpl:y * bpl + 4 * width]
        if lsb_first:
            b, g, r = line[0::4], line[1::4], line[2::4]
        else:
            r, g, b = line[1::4], line[2::4], line[3::4]
        rgb = bytearray(3 * width)
        rgb[0::3], rgb[1::3], rgb[2::3] = r, g, b
        rows.append(b'\0' + bytes(rgb))
        if y0 <= y < y0 + h:
            for x in range(x0, min(x0 + w, width)):
                if max(r[x], g[x], b[x]) - min(r[x], g[x], b[x]) > 60:
                    colourful += 1

    def chunk(kind, body):
        return (struct.pack('>I', len(body)) + kind + body +
                struct.pack('>I', zlib.crc32(kind + body) & 0xffffffff))

    with open(sys.argv[2], 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' +
                chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(b''.join(rows), 6)) + chunk(b'IEND', b''))
    print('colourful %d' % colourful)


if __name__ == '__main__':
    main()
