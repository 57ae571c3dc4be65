#!/usr/bin/env python3
"""Checks that Loom's folders include only the layers below them (docs/architecture.md).

Each source file's `#include "folder/..."` lines are compared with the layers its folder may
use. Exit status 1 and one line per violation when a file reaches upward or sideways; the
CMake libraries enforce the same order at link time."""
import pathlib
import re
import sys

ENGINES = {"types", "pack", "model", "match", "place", "codec"}
# folder -> the folders it may include (itself, base/ and include/loom are always allowed)
ALLOWED = {
    "base": set(),
    "types": set(),
    "pack": {"types"},
    "model": {"types"},
    "match": set(),
    "place": set(),
    "codec": set(),
    "runtime": ENGINES,
    "exec": ENGINES | {"runtime"},
    "mpi": ENGINES | {"runtime", "exec"},
    "transport": ENGINES | {"runtime", "exec", "mpi"},
    "ops": ENGINES | {"runtime", "exec", "mpi", "transport"},
    # The halo library: beside ops/, never its entry points or interpose/.
    "halo": ENGINES | {"runtime", "exec", "mpi", "transport"},
    "interpose": ENGINES | {"runtime", "exec", "mpi", "transport", "ops"},
    # Tools above the library: the layers' interfaces, never interpose/'s entry points.
    "bench": ENGINES | {"runtime", "exec", "mpi", "ops"},
    "tests": ENGINES | {"runtime", "exec"},
    "examples": set(),
    # The simulation programs (SMPI variant and host builds): the libraries they drive.
    "sim": ENGINES | {"runtime", "exec", "mpi", "transport", "ops", "halo"},
}
# Subfolders that may also use one more layer: the halo library's own tests test its MPI-free
# flag protocol (halo/step_flags.hpp) with threads, without MPI.
EXTRA = {("tests", "halo"): {"halo"}}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
SOURCES = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = []
    checked = 0
    for folder, allowed in ALLOWED.items():
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SOURCES or "build" in path.relative_to(root).parts:
                continue
            checked += 1
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1)
                parts = path.relative_to(root).parts
                extra = EXTRA.get(tuple(parts[:2]), set())
                if target in (folder, "loom", "base") or target in allowed or target in extra:
                    continue
                if target not in ALLOWED:
                    continue  # not one of Loom's folders (a system or third-party path)
                problems.append(f"{path.relative_to(root)}:{number}: {folder}/ includes {target}/")
    for problem in problems:
        print(problem)
    print(f"check_layers: {checked} files, {len(problems)} upward or sideways includes")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
