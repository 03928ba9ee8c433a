#!/usr/bin/python3
"""Writes the kernel library (the KLIB section: an ELF shared object) of a compiled model (.loom,
format version 3: "LOOMMODL", u32 version, u32 section count, then per section a 4-byte kind, a
u64 length and the bytes; runtime/model_file.h) to a file, for a disassembler to read.

    model_library.py MODEL.loom OUT.so
"""
import struct
import sys


def main(model, out):
    data = open(model, "rb").read()
    if data[:8] != b"LOOMMODL":
        sys.exit(f"{model}: not a compiled Loom model")
    version, count = struct.unpack_from("<II", data, 8)
    if version != 3:
        sys.exit(f"{model}: model format version {version}; this script reads version 3")
    pos = 16
    for _ in range(count):
        kind = data[pos:pos + 4]
        (length,) = struct.unpack_from("<Q", data, pos + 4)
        pos += 12
        if kind == b"KLIB":
            open(out, "wb").write(data[pos:pos + length])
            return
        pos += length
    sys.exit(f"{model}: no kernel library section")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
