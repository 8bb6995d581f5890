#!/usr/bin/env python3
"""Which loaded ELF objects have a PT_NOTE segment that no readable PT_LOAD's file contents cover?

The loader maps only PT_LOAD segments, so such a note's address (bias + p_vaddr) is unmapped or
another mapping's; aiflame's module scan read every PT_NOTE in memory until 2026-11-27 (a SIGSEGV
hunt: bench/RESULTS.md, fourteenth session). Imports the frameworks named on the command line (those
that fail to import are reported and skipped), then reads each mapped object's program headers from
its file. Prints one line per such note and a count.

Usage: notes_outside_load.py [MODULE...]   (default: torch transformers torchvision timm jax cupy triton)
"""
import importlib
import struct
import sys

PT_LOAD, PT_NOTE, PF_R = 1, 4, 4


def phdrs(path):
    with open(path, "rb") as f:
        eh = f.read(64)
        if len(eh) < 64 or eh[:4] != b"\x7fELF" or eh[4] != 2:
            return None
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        f.seek(phoff)
        raw = f.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align = struct.unpack_from(
            "<IIQQQQQQ", raw, i * phentsize)
        out.append((p_type, p_flags, p_vaddr, p_filesz, p_memsz))
    return out


def main():
    names = sys.argv[1:] or ["torch", "transformers", "torchvision", "timm", "jax", "cupy", "triton"]
    for n in names:
        try:
            importlib.import_module(n)
        except Exception as e:  # noqa: BLE001 - a probe: report and go on
            print(f"import {n}: {type(e).__name__}: {e}")
    try:
        import torch
        if torch.cuda.is_available():
            torch.ones(4, device="cuda").sum().item()
    except Exception:
        pass
    paths = []
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) >= 6 and parts[5].startswith("/") and parts[5] not in paths:
            paths.append(parts[5])
    objects = bad = 0
    for path in paths:
        try:
            ph = phdrs(path)
        except OSError:
            continue
        if ph is None:
            continue
        objects += 1
        loads = [(v, v + fs) for t, fl, v, fs, ms in ph if t == PT_LOAD and fl & PF_R]
        for t, fl, v, fs, ms in ph:
            if t == PT_NOTE and not any(lo <= v and v + ms <= hi for lo, hi in loads):
                bad += 1
                print(f"outside: {path} PT_NOTE vaddr={v:#x} memsz={ms:#x}; readable loads {[(hex(a), hex(b)) for a, b in loads]}")
    print(f"{objects} ELF objects mapped, {bad} PT_NOTE segments outside their readable loads")


if __name__ == "__main__":
    main()
