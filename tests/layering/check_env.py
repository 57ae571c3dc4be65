#!/usr/bin/env python3
"""Checks the README's environment table against the variables Loom's code declares.

Every LOOM_* variable a library folder reads is declared as a base::EnvVar (base/env.hpp) with
its default; this script finds the declarations, then checks that
  - no library source reads a LOOM_* variable with getenv directly (around its declaration),
  - every declared variable has a README row whose default is the declared one,
  - every README row names a variable that something reads: a declaration, or a script in
    tools/ (loomrun, demo, test-all, install, ...).
Exit status 1 with one line per problem."""
import pathlib
import re
import sys

LIBRARY = ("base", "types", "pack", "model", "match", "place", "codec", "runtime", "exec",
           "mpi", "transport", "ops", "interpose")
SOURCES = (".c", ".h", ".cpp", ".hpp", ".cu")
DECLARATION = re.compile(
    r'EnvVar\s+\w+\s*\{\s*"(LOOM_\w+)"\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+),\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\}',
    re.S)
RAW_READ = re.compile(r'getenv\(\s*"LOOM_')
ROW = re.compile(r"^\|\s*`(LOOM_\w+)`\s*\|\s*(.*?)\s*\|")


def joined(literals):
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', literals))


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems, declared = [], {}
    for folder in LIBRARY:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SOURCES:
                continue
            text = path.read_text(errors="replace")
            for match in DECLARATION.finditer(text):
                declared[match.group(1)] = (joined(match.group(2)), path.relative_to(root))
            for match in RAW_READ.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{path.relative_to(root)}:{line}: reads LOOM_* with getenv; "
                                "declare a base::EnvVar")
    readme = (root / "README.md").read_text()
    rows = {}
    for line in readme.splitlines():
        match = ROW.match(line)
        if match:
            rows[match.group(1)] = match.group(2).replace("`", "").strip()
    for name, (default, where) in sorted(declared.items()):
        if name not in rows:
            problems.append(f"README.md: no row for {name} (declared in {where})")
        elif rows[name] != default:
            problems.append(f"README.md: {name} default '{rows[name]}', declared '{default}' "
                            f"in {where}")
    scripts = "\n".join(p.read_text(errors="replace") for p in (root / "tools").rglob("*")
                        if p.is_file() and p.suffix in ("", ".sh", ".py", ".in"))
    for name in sorted(rows):
        if name not in declared and name not in scripts:
            problems.append(f"README.md: {name} is documented but nothing reads it")
    for problem in problems:
        print(problem)
    print(f"check_env: {len(declared)} declared variables, {len(rows)} README rows, "
          f"{len(problems)} problems")
    return 1 if problems or not declared else 0


if __name__ == "__main__":
    sys.exit(main())
