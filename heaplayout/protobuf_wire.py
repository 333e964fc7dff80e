"""The protocol-buffer wire format, encoding side only: enough to write profile.proto.

pprof's file is a gzip-compressed `perftools.profiles.Profile` message. Its schema uses only
varints (int64/uint64/bool), length-delimited fields (strings, sub-messages, packed
repeated varints), so the encoder is a few functions over bytearrays, and heaplayout needs
no protobuf package. https://protobuf.dev/programming-guides/encoding/ describes the format.
"""

from __future__ import annotations

from typing import Iterable

WIRE_VARINT = 0
WIRE_LEN = 2


def varint(value: int) -> bytes:
    """Base-128 varint; negative int64 values take their two's complement in 64 bits (10 bytes)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


class Message:
    """One message being written: fields are appended in the order they are added."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def int(self, field: int, value: int) -> "Message":
        """A varint field; zero is the default and is left out, as proto3 writers do."""
        if value:
            self.buf += key(field, WIRE_VARINT) + varint(value)
        return self

    def bytes(self, field: int, data: bytes) -> "Message":
        self.buf += key(field, WIRE_LEN) + varint(len(data)) + data
        return self

    def string(self, field: int, text: str) -> "Message":
        return self.bytes(field, text.encode("utf-8"))

    def message(self, field: int, sub: "Message") -> "Message":
        return self.bytes(field, bytes(sub.buf))

    def packed(self, field: int, values: Iterable[int]) -> "Message":
        """A packed repeated varint field (the default encoding of repeated scalars in proto3)."""
        data = b"".join(varint(v) for v in values)
        if data:
            self.bytes(field, data)
        return self

    def encode(self) -> bytes:
        return bytes(self.buf)
