"""A zip archive that takes stored gzip documents without compressing them again.

A zip member compressed with deflate holds a raw deflate stream, its CRC-32 and its sizes; a
gzip member holds the same three things around the same kind of stream.  The tournament
archive puts every finished match's log in a zip, and each log is kept gzipped in the
database: ``zipfile`` had to inflate each one and deflate it again, a third of a download's
time (~20 ms of ~56 for a 256-entrant tournament's 96 logs).  :meth:`ZipWriter.add_gzip` copies
the stream instead; only a document that must change (or a gzip member of an unusual shape)
is deflated here.

The standard library's ``zipfile`` cannot be handed a stream already deflated, so this is a
writer of its own: the format's local headers, central directory and end record (PKWARE's
APPNOTE), with the zip64 records where a size, an offset or the number of members needs
them.  ``zipfile``, ``unzip`` and every other reader read it back (tests/arena/test_zipwriter.py).
"""

from __future__ import annotations

import gzip
import struct
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")
_END64 = struct.Struct("<IQHHIIQQQQ")
_LOCATOR64 = struct.Struct("<IIQI")

_DEFLATE = 8
_UTF8_NAME = 0x0800
_MADE_BY = (3 << 8) | 45
"""Unix (3), APPNOTE 4.5: the file modes in the external attributes are Unix modes."""
_FILE_MODE = (0o100644 << 16)
"""A regular file, readable by all (``-rw-r--r--``)."""

_FEXTRA, _FNAME, _FCOMMENT, _FHCRC = 4, 8, 16, 2


@dataclass(frozen=True)
class _Member:
    name: bytes
    flags: int
    crc: int
    compressed: int
    size: int
    offset: int


class GzipParts(NamedTuple):
    """A gzip member taken apart: what a zip member needs of it."""

    stream: bytes
    """The raw deflate stream."""
    data: bytes
    """The document it inflates to."""
    crc: int
    """The document's CRC-32 (the member's trailer, checked)."""


def gzip_parts(member: bytes) -> GzipParts | None:
    """The raw deflate stream of a single gzip member, the document it inflates to and its
    CRC-32, or None when ``member`` is not exactly one well-formed member (a second member, trailing
    bytes, reserved flags, a CRC or size that does not match): the caller then treats it
    as ``gzip.decompress`` would (which says what is wrong with a broken one)."""
    if len(member) < 18 or member[:3] != b"\x1f\x8b\x08" or member[3] & 0xE0:
        return None
    flags, at = member[3], 10
    try:
        if flags & _FEXTRA:
            at += 2 + int.from_bytes(member[at:at + 2], "little")
        for flag in (_FNAME, _FCOMMENT):
            if flags & flag:
                at = member.index(b"\0", at) + 1
        if flags & _FHCRC:
            at += 2
        inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        data = inflate.decompress(member[at:])
    except (ValueError, zlib.error):
        return None
    trailer = inflate.unused_data
    if not inflate.eof or len(trailer) != 8:
        return None
    crc, size = struct.unpack("<II", trailer)
    if crc != zlib.crc32(data) or size != len(data) & 0xFFFFFFFF:
        return None
    return GzipParts(member[at:len(member) - 8], data, crc)


class ZipWriter:
    """A zip archive built in memory, member by member; :meth:`finish` gives its bytes.

    Every member is deflated (method 8) and dated when the writer was made (local time, as
    ``zipfile`` dates what it writes)."""

    ZIP64_FROM = 0xFFFFFFFF
    """A size or an offset from this on is written in a zip64 record (tests lower it)."""
    MANY_MEMBERS = 0xFFFF
    """From this many members on, the count is written in the zip64 end record."""

    def __init__(self, level: int = 6) -> None:
        self._chunks: list[bytes] = []
        self._offset = 0
        self._members: list[_Member] = []
        self._level = level
        t = time.localtime()
        self._dos_time = (t.tm_hour << 11) | (t.tm_min << 5) | (t.tm_sec // 2)
        self._dos_date = ((max(t.tm_year, 1980) - 1980) << 9) | (t.tm_mon << 5) | t.tm_mday

    def add(self, name: str, data: bytes) -> None:
        """``data`` deflated here, as ``name``."""
        deflate = zlib.compressobj(self._level, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._write(name, deflate.compress(data) + deflate.flush(), zlib.crc32(data),
                    len(data))

    def add_gzip(self, name: str, member: bytes,
                 rewrite: Callable[[bytes], bytes] = lambda data: data) -> None:
        """A gzip member's document as ``name``: its deflate stream copied as it is, unless
        ``rewrite`` (given the inflated document) returns other bytes, which are then
        deflated here.  A member :func:`gzip_parts` does not take apart goes through
        ``gzip.decompress`` (and its errors)."""
        parts = gzip_parts(member)
        if parts is None:
            self.add(name, rewrite(gzip.decompress(member)))
            return
        wanted = rewrite(parts.data)
        if wanted == parts.data:  # the CRC checked by gzip_parts, not computed again
            self._write(name, parts.stream, parts.crc, len(parts.data))
        else:
            self.add(name, wanted)

    def _write(self, name: str, stream: bytes, crc: int, size: int) -> None:
        encoded = name.encode("utf-8")
        flags = 0 if name.isascii() else _UTF8_NAME
        big = max(size, len(stream)) >= self.ZIP64_FROM
        extra = struct.pack("<HHQQ", 1, 16, size, len(stream)) if big else b""
        header = _LOCAL.pack(0x04034B50, 45 if big else 20, flags, _DEFLATE, self._dos_time,
                             self._dos_date, crc, 0xFFFFFFFF if big else len(stream),
                             0xFFFFFFFF if big else size, len(encoded), len(extra))
        self._members.append(_Member(encoded, flags, crc, len(stream), size, self._offset))
        self._chunks += (header, encoded, extra, stream)
        self._offset += len(header) + len(encoded) + len(extra) + len(stream)

    def _central_entry(self, m: _Member) -> bytes:
        """A member's central directory entry: a size or offset too large for its field
        is 0xFFFFFFFF there and written in the zip64 extra field (in APPNOTE's order)."""
        size, compressed, offset = (self._field(v) for v in (m.size, m.compressed, m.offset))
        wide = [v for v in (m.size, m.compressed, m.offset) if v >= self.ZIP64_FROM]
        extra = struct.pack(f"<HH{len(wide)}Q", 1, 8 * len(wide), *wide) if wide else b""
        return _CENTRAL.pack(0x02014B50, _MADE_BY, 45 if wide else 20, m.flags, _DEFLATE,
                             self._dos_time, self._dos_date, m.crc, compressed, size,
                             len(m.name), len(extra), 0, 0, 0, _FILE_MODE, offset,
                             ) + m.name + extra

    def _field(self, value: int) -> int:
        """A 32-bit size or offset field's value: 0xFFFFFFFF for one in a zip64 record."""
        return value if value < self.ZIP64_FROM else 0xFFFFFFFF

    def finish(self) -> bytes:
        """The archive: the members, their central directory and its end record(s)."""
        start = self._offset
        directory = b"".join(self._central_entry(m) for m in self._members)
        count = len(self._members)
        tail = []
        if count >= self.MANY_MEMBERS or start >= self.ZIP64_FROM or \
                len(directory) >= self.ZIP64_FROM:
            end64_at = start + len(directory)
            tail.append(_END64.pack(0x06064B50, _END64.size - 12, _MADE_BY, 45, 0, 0, count,
                                    count, len(directory), start))
            tail.append(_LOCATOR64.pack(0x07064B50, 0, end64_at, 1))
        shown = count if count < self.MANY_MEMBERS else 0xFFFF
        tail.append(_END.pack(0x06054B50, 0, 0, shown, shown, self._field(len(directory)),
                              self._field(start), 0))
        return b"".join([*self._chunks, directory, *tail])


__all__ = ["GzipParts", "ZipWriter", "gzip_parts"]
