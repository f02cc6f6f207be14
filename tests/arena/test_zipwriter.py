"""arena.core.zipwriter: a zip that takes stored gzip documents without deflating them again,
read back by the standard library's ``zipfile`` (which checks every member's CRC-32)."""

from __future__ import annotations

import gzip
import io
import random
import struct
import zipfile
import zlib

import pytest

from arena.core.zipwriter import ZipWriter, gzip_parts


def read_back(archive: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        assert z.testzip() is None  # every member's CRC-32 and size check out
        return {name: z.read(name) for name in z.namelist()}


def document(rng: random.Random, size: int) -> bytes:
    words = [b'{"move":', b'"3S"', b",", b"[]", b'"pass"', b"}", b" 42"]
    return b"".join(rng.choice(words) for _ in range(size))


def test_stored_gzip_goes_in_as_it_is_and_reads_back() -> None:
    """A gzip member's deflate stream is copied byte for byte (nothing deflated again), next
    to members deflated here; every reader's view of the names and bytes is what was added,
    a name beyond ASCII included."""
    rng = random.Random(5)
    docs = {f"logs/match-{i}.json": document(rng, rng.randrange(0, 3000)) for i in range(20)}
    stored = {name: gzip.compress(doc, mtime=0) for name, doc in docs.items()}
    z = ZipWriter()
    z.add("tournament.json", b'{\n  "name": "Cup"\n}')
    z.add("standings-\u00e9t\u00e9.csv", "rank,bot\n1,\u00e9clair\n".encode())
    for name, member in stored.items():
        z.add_gzip(name, member)
    archive = z.finish()
    assert read_back(archive) == {"tournament.json": b'{\n  "name": "Cup"\n}',
                                  "standings-\u00e9t\u00e9.csv":
                                      "rank,bot\n1,\u00e9clair\n".encode(), **docs}
    for member in stored.values():
        parts = gzip_parts(member)
        assert parts is not None and parts[0] in archive  # the stored stream itself


def test_a_document_rewritten_on_the_way_is_deflated_anew() -> None:
    """``rewrite`` sees the inflated document; what it changes is what the zip holds (the
    archive's repair of a log stored before the text rule), what it leaves is copied."""
    old = gzip.compress(b'{"name":"\\ud800"}', mtime=0)
    fine = gzip.compress(b'{"name":"ok"}', mtime=0)
    z = ZipWriter()
    z.add_gzip("old.json", old, lambda data: data.replace(b"\\ud800", b"\\ufffd"))
    z.add_gzip("fine.json", fine, lambda data: data.replace(b"\\ud800", b"\\ufffd"))
    archive = z.finish()
    assert read_back(archive) == {"old.json": b'{"name":"\\ufffd"}', "fine.json": b'{"name":"ok"}'}
    fine_stream = gzip_parts(fine)
    assert fine_stream is not None and fine_stream[0] in archive


def gzip_with_header_fields(data: bytes) -> bytes:
    """A gzip member with every optional header field (extra, name, comment, header CRC),
    which Python's gzip does not write all of."""
    body = gzip.compress(data, mtime=0)
    flags = 4 | 8 | 16 | 2
    extra = b"AB\x02\x00hi"
    header = b"\x1f\x8b\x08" + bytes([flags]) + body[4:10]
    header += struct.pack("<H", len(extra)) + extra + b"log.json\0" + b"a comment\0"
    header += struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    return header + body[10:]


def test_gzip_members_of_every_shape() -> None:
    """Optional header fields are stepped over; two members in a row, or a member with
    bytes after it, are not taken apart but read as ``gzip.decompress`` reads them (both
    members; an error for trailing garbage); a broken CRC is refused as gzip refuses it."""
    data = b'{"deals":[1,2,3]}' * 50
    fancy = gzip_with_header_fields(data)
    assert gzip.decompress(fancy) == data
    parts = gzip_parts(fancy)
    assert parts is not None and parts[1] == data
    two = gzip.compress(b"[1,", mtime=0) + gzip.compress(b"2]", mtime=0)
    assert gzip_parts(two) is None
    z = ZipWriter()
    z.add_gzip("fancy.json", fancy)
    z.add_gzip("two.json", two)
    assert read_back(z.finish()) == {"fancy.json": data, "two.json": b"[1,2]"}

    good = gzip.compress(data, mtime=0)
    broken_crc = good[:-8] + bytes([good[-8] ^ 1]) + good[-7:]
    for bad, error in ((good + b"junk", gzip.BadGzipFile), (broken_crc, gzip.BadGzipFile),
                       (b"not gzip at all", gzip.BadGzipFile), (good[:-3], EOFError)):
        assert gzip_parts(bad) is None
        with pytest.raises(error):
            ZipWriter().add_gzip("bad.json", bad)


class SmallZip64(ZipWriter):
    """Zip64 records from 100 bytes and 3 members on: the shape a >4 GiB archive takes,
    without writing 4 GiB."""

    ZIP64_FROM = 100
    MANY_MEMBERS = 3


def test_zip64_records_for_large_sizes_offsets_and_counts() -> None:
    """Members past the 32-bit fields' reach (sizes, offsets, the directory's place) and
    more members than the end record counts are written in zip64 records, and read back."""
    rng = random.Random(9)
    docs = {f"m{i}.json": document(rng, n) for i, n in enumerate([5, 400, 3, 90, 1200])}
    z = SmallZip64()
    for name, doc in docs.items():
        if len(doc) % 2:
            z.add(name, doc)
        else:
            z.add_gzip(name, gzip.compress(doc, mtime=0))
    archive = z.finish()
    assert b"PK\x06\x06" in archive and b"PK\x06\x07" in archive  # zip64 end, its locator
    assert read_back(archive) == docs


def test_more_members_than_the_end_record_counts() -> None:
    """70,000 members: more than the classic end record's 65,535, as a tournament of many
    rounds could hold."""
    z = ZipWriter()
    for i in range(70_000):
        z.add(f"logs/match-{i}.json", b"{}")
    archive = z.finish()
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        names = zf.namelist()
        assert len(names) == 70_000 and zf.read("logs/match-69999.json") == b"{}"
