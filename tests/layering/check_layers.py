#!/usr/bin/env python3
"""Checks that Loom's folders include only the layers below them (docs/architecture.md).

usage: check_layers.py SOURCE_DIR [--targets TABLE --views VIEWS_DIR]

Each source file's `#include "folder/..."` lines are compared with the layers its folder may
use. With --targets (the table cmake/LoomLayers.cmake writes: each target, its folder, its
include directories and its links), each target is checked too: no include directory may be
the source root or a folder of it, each folder view it sees (VIEWS_DIR/<folder>, which the
build gives only to the targets that link the folder's library) must be one its folder may
use, and a library's links must be layers it may use. Exit status 1 and one line per
violation."""
import argparse
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
    # loom-bench: the public headers (include/loom/) and the declared test-only set: libloom's
    # include/loom/testing.h and the MPI-free engines it links (bench/CMakeLists.txt).
    "bench": {"types", "pack", "model", "codec", "place"},
    "tests": ENGINES | {"runtime", "exec"},
    "examples": set(),
    # The simulation programs (SMPI variant and host builds): the libraries they drive.
    "sim": ENGINES | {"runtime", "exec", "mpi", "transport", "ops", "halo"},
}
# Subfolders that may also use more layers: the halo library's own tests test its MPI-free
# flag protocol (halo/step_flags.hpp) with threads, without MPI; step_flags.hpp includes the
# header-only mpi/sim_clock.hpp (empty inlines outside SMPI).
EXTRA = {("tests", "halo"): {"halo", "mpi"}}
# Folders whose targets are libraries of Loom (their links are checked); the others (bench,
# tests, examples) link what they run or test and are held to their include directories.
LIBRARIES = set(ALLOWED) - {"bench", "tests", "examples"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
SOURCES = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh")


def may_use(folder_path, target):
    """Whether code in folder_path (e.g. "tests/halo") may use the folder `target`."""
    parts = tuple(folder_path.split("/"))
    folder = parts[0]
    extra = EXTRA.get(parts[:2], set())
    return target in (folder, "base") or target in ALLOWED[folder] or target in extra


def check_targets(root, table, views):
    """Each target's include directories and links against ALLOWED."""
    problems = []
    rows = [line.split("\t") for line in table.read_text().splitlines() if line.strip()]
    folder_of = {row[0]: row[1].split("/")[0] for row in rows}
    folder_of["loom_base"] = "base"
    build = views.parent
    for name, folder_path, includes, links in rows:
        folder = folder_path.split("/")[0]
        if folder not in ALLOWED:
            problems.append(f"target {name}: folder {folder_path}/ is not in the layer table")
            continue
        for entry in filter(None, includes.split(";")):
            path = pathlib.Path(entry).resolve()
            if path == views or views in path.parents:
                seen = path.relative_to(views).parts[0]
                if not may_use(folder_path, seen):
                    problems.append(f"target {name} ({folder_path}/) sees {seen}/'s headers")
            elif path == root or (root in path.parents and path != build and
                                  build not in path.parents and
                                  path.relative_to(root).parts[0] != "include"):
                problems.append(f"target {name} ({folder_path}/) has {path} as include "
                                f"directory: a folder's headers come through its view")
        if folder not in LIBRARIES:
            continue
        for link in re.sub(r"\$<BUILD_INTERFACE:([^>]*)>", r"\1", links).split(";"):
            linked = folder_of.get(link)
            if linked and not may_use(folder_path, linked):
                problems.append(f"target {name} ({folder_path}/) links {link} ({linked}/)")
    return problems, len(rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root", nargs="?", default=".")
    parser.add_argument("--targets", type=pathlib.Path)
    parser.add_argument("--views", type=pathlib.Path)
    args = parser.parse_args()
    root = pathlib.Path(args.root).resolve()
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
    targets = 0
    if args.targets:
        target_problems, targets = check_targets(root, args.targets, args.views.resolve())
        problems += target_problems
    for problem in problems:
        print(problem)
    print(f"check_layers: {checked} files, {targets} targets, "
          f"{len(problems)} upward or sideways includes or links")
    return 1 if problems or checked == 0 or (args.targets and targets == 0) else 0


if __name__ == "__main__":
    sys.exit(main())
