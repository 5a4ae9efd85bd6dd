"""Decode a PNG (8-bit RGB or RGBA, not interlaced: what Chromium's ``--screenshot`` writes) into rows
of RGB pixels with the standard library only, so a test can look at what a page drew."""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type -> bytes per pixel at bit depth 8

RGB = tuple[int, int, int]


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    rows: list[list[RGB]]

    def matching(self, colour: RGB, tolerance: int = 0) -> list[tuple[int, int]]:
        """(x, y) of every pixel within ``tolerance`` of ``colour`` on each channel."""
        return [(x, y) for y, row in enumerate(self.rows) for x, pixel in enumerate(row)
                if all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))]


def hex_colour(text: str) -> RGB:
    value = text.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def decode(data: bytes) -> Image:
    assert data[:8] == SIGNATURE, "not a PNG"
    offset, idat = 8, b""
    width = height = depth = colour = interlace = 0
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    assert depth == 8 and colour in CHANNELS and not interlace, (depth, colour, interlace)
    bpp = CHANNELS[colour]
    raw = zlib.decompress(idat)
    stride = width * bpp
    previous = bytearray(stride)
    rows: list[list[RGB]] = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = previous[i]
            corner = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF
        rows.append([(line[x * bpp], line[x * bpp + 1], line[x * bpp + 2]) for x in range(width)])
        previous = line
    return Image(width, height, rows)
