"""Cuts a fuzz seed for cfi_table_fuzz from an ELF shared object: three u64 (image address,
.eh_frame_hdr address, load bias 0) and the bytes from .eh_frame_hdr to the end of .eh_frame.
Usage: python3 make_cfi_seed.py LIB.so OUT [--truncate N]"""
import struct
import subprocess
import sys

lib, out = sys.argv[1], sys.argv[2]
sections = {}
for line in subprocess.run(["readelf", "-SW", lib], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.replace("[ ", "[").split()
    if len(parts) > 5 and parts[1] in (".eh_frame_hdr", ".eh_frame"):
        sections[parts[1]] = (int(parts[3], 16), int(parts[4], 16), int(parts[5], 16))  # addr, offset, size
hdr_addr, hdr_off, _ = sections[".eh_frame_hdr"]
eh_addr, eh_off, eh_size = sections[".eh_frame"]
assert eh_addr - hdr_addr == eh_off - hdr_off, "the two sections are laid out differently in memory and file"
data = open(lib, "rb").read()[hdr_off:eh_off + eh_size]
if "--truncate" in sys.argv:
    data = data[:int(sys.argv[sys.argv.index("--truncate") + 1])]
open(out, "wb").write(struct.pack("<QQQ", hdr_addr, hdr_addr, 0) + data)
