"""Just enough of the protobuf wire format to read mdcast frames in tests
(field numbers from proto/wire/common.proto), without generated code."""
import socket
import struct
import time

from harness import split_frames  # noqa: F401 - tests read frames through this module

REFRESH, UPDATE, ITEM_STATUS, CLOSE = 20, 21, 22, 5


def varint(buf, i):
    value, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(body):
    """{field number: [value, ...]}; varints as int, fixed64 as int, bytes as bytes."""
    out, i = {}, 0
    while i < len(body):
        key, i = varint(body, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = varint(body, i)
        elif kind == 1:
            value = struct.unpack_from("<Q", body, i)[0]
            i += 8
        elif kind == 2:
            length, i = varint(body, i)
            value = body[i:i + length]
            i += length
        elif kind == 5:
            value = struct.unpack_from("<I", body, i)[0]
            i += 4
        else:
            raise ValueError(f"wire type {kind}")
        out.setdefault(number, []).append(value)
    return out


def first(f, number, default=0):
    return f.get(number, [default])[0]


def read_until_quiet(sock, quiet_s, limit_s, ready=lambda: True, slow_while=lambda: False):
    """Every frame the server sends until it has been quiet for `quiet_s` once `ready()`,
    as (type, body). While `slow_while()` it reads like a slow client: 4 KiB every 20 ms."""
    data, deadline, quiet_since = bytearray(), time.monotonic() + limit_s, None
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        slow = slow_while()
        try:
            chunk = sock.recv(4096 if slow else 1 << 20)
        except socket.timeout:
            if not slow and ready():
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > quiet_s:
                    break
            continue
        if not chunk:
            break
        quiet_since = None
        data += chunk
        if slow:
            time.sleep(0.02)
    return split_frames(bytes(data))[0]
