#!/usr/bin/env python3
"""Checks what a shared library exports (its dynamic symbol table, `nm -D --defined-only`).

usage: check_exports.py LIBRARY PATTERN REQUIRED...

Every defined dynamic symbol must match PATTERN (a Python regular expression, matched from the
start), and each REQUIRED symbol must be among them, so that the check cannot pass on a library
that exports nothing. Exit status 1 and the symbols that break the rule, counted by prefix."""
import collections
import re
import subprocess
import sys


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip())
        return 2
    library, pattern, required = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3:]
    listing = subprocess.run(["nm", "-D", "--defined-only", library], check=True,
                             capture_output=True, text=True).stdout
    symbols = [line.split()[-1] for line in listing.splitlines() if len(line.split()) >= 3]
    stray = [s for s in symbols if not pattern.match(s)]
    missing = [s for s in required if s not in symbols]
    prefixes = collections.Counter(re.match(r"[A-Za-z]+_?|_Z|.", s).group(0) for s in symbols)
    print(f"check_exports: {library}: {len(symbols)} symbols "
          f"({', '.join(f'{p}* {n}' for p, n in sorted(prefixes.items()))})")
    for s in stray[:40]:
        print(f"  exported but not part of its interface: {s}")
    if len(stray) > 40:
        print(f"  ... and {len(stray) - 40} more")
    for s in missing:
        print(f"  missing: {s}")
    return 1 if stray or missing else 0


if __name__ == "__main__":
    sys.exit(main())
