#!/usr/bin/env python3
"""Checks a flame graph SVG: well-formed XML, and each name given appears in some <title>.

Usage: check_svg.py FILE [NAME...]   (exit 0 when all is well, 1 otherwise, 2 on bad usage)
Names are compared as the SVG holds them, i.e. after the writer's clean-up (a NUL byte or
invalid UTF-8 becomes U+FFFD); pass them that way.
"""
import sys
import xml.etree.ElementTree as ET

SVG_NS = "{http://www.w3.org/2000/svg}"


def main(argv):
    if len(argv) < 2:
        print("usage: check_svg.py FILE [NAME...]", file=sys.stderr)
        return 2
    try:
        root = ET.parse(argv[1]).getroot()
    except (ET.ParseError, OSError) as e:
        print(f"check_svg: {argv[1]}: not well-formed: {e}", file=sys.stderr)
        return 1
    if root.tag != SVG_NS + "svg":
        print(f"check_svg: root element is {root.tag}, not svg", file=sys.stderr)
        return 1
    # A title is "NAME (N samples, P%)"; the suffix holds no " (", so the last one splits it.
    names = {(t.text or "").rsplit(" (", 1)[0] for t in root.iter(SVG_NS + "title")}
    missing = [n for n in argv[2:] if n not in names]
    for n in missing:
        print(f"check_svg: no <title> holds {n!r}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
