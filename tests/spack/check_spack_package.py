#!/usr/bin/env python3
"""Checks spack/packages/loom/package.py without Spack (which cannot fetch here).

usage: check_spack_package.py LOOM_SOURCE_DIR

Imports the package under a stand-in `spack.package` module that records Spack's directives
(version, variant, depends_on, requires, conflicts, maintainers) as Spack's metaclass would,
then checks the variants and dependencies and calls cmake_args() on specs for Open MPI,
MPICH and ~interposer: every -D it passes must be a cache variable of Loom's CMakeLists.
This is a shape check of the recipe, not a Spack concretisation or build.
"""
import os
import re
import sys
import types

PENDING = []


def directive(kind):
    def record(*args, **kwargs):
        PENDING.append((kind, args, kwargs))

    return record


class PackageBase:
    directives = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        inherited = [d for base in cls.__mro__[1:] for d in getattr(base, "directives", ())]
        cls.directives = tuple(inherited) + tuple(PENDING)
        PENDING.clear()

    def __init__(self, spec):
        self.spec = spec

    @staticmethod
    def define(name, value):
        if isinstance(value, bool):
            value = "ON" if value else "OFF"
        return f"-D{name}={value}"

    def define_from_variant(self, name, variant):
        return self.define(name, self.spec.variants[variant])


class CMakePackage(PackageBase):
    pass


class CudaPackage(PackageBase):
    pass


# CudaPackage's own variants, as Spack's defines them.
CudaPackage.directives = (
    ("variant", ("cuda",), {"default": False}),
    ("variant", ("cuda_arch",), {"values": ("none",)}),
)


class FakeSpec:
    """Enough of a concrete spec for cmake_args(): variants and one MPI provider."""

    def __init__(self, mpi, **variants):
        self.mpi = mpi
        self.variants = variants

    def satisfies(self, constraint):
        if constraint.startswith("^"):
            return self.mpi == constraint[1:]
        wanted = re.findall(r"([+~])(\w+)", constraint)
        return all(self.variants.get(name, False) == (sign == "+") for sign, name in wanted)

    def __getitem__(self, name):
        assert name == "mpi" and self.mpi, f"spec[{name!r}] on a spec without it"
        prefix = types.SimpleNamespace(bin=f"/opt/{self.mpi}/bin")
        return types.SimpleNamespace(mpicc=f"/opt/{self.mpi}/bin/mpicc", prefix=prefix)


def install_stub():
    spack = types.ModuleType("spack")
    package = types.ModuleType("spack.package")
    for kind in ("version", "variant", "depends_on", "requires", "conflicts", "maintainers"):
        setattr(package, kind, directive(kind))
    package.CMakePackage = CMakePackage
    package.CudaPackage = CudaPackage
    package.join_path = os.path.join
    package.__all__ = [name for name in vars(package) if not name.startswith("_")]
    spack.package = package
    sys.modules["spack"] = spack
    sys.modules["spack.package"] = package


def cache_variables(source_dir):
    """Names Loom's CMake files define with option() or set(... CACHE ...)."""
    names = set()
    for directory, _, files in os.walk(source_dir):
        top = os.path.relpath(directory, source_dir).split(os.sep)[0]
        if top.startswith("build") or (top.startswith(".") and top != "."):
            continue
        for file in files:
            if file == "CMakeLists.txt" or file.endswith(".cmake"):
                text = open(os.path.join(directory, file)).read()
                names.update(re.findall(r"option\((\w+)", text))
                names.update(re.findall(r"set\((\w+)\s[^)]*\bCACHE\b", text))
    return names


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source_dir = sys.argv[1]
    install_stub()
    path = os.path.join(source_dir, "spack", "packages", "loom", "package.py")
    namespace = {"__name__": "spack.pkg.loom"}
    exec(compile(open(path).read(), path, "exec"), namespace)
    loom = namespace["Loom"]
    failures = []

    def check(condition, what):
        print(("ok    " if condition else "FAIL  ") + what)
        if not condition:
            failures.append(what)

    check(issubclass(loom, CMakePackage) and issubclass(loom, CudaPackage),
          "Loom is a CMakePackage and a CudaPackage")
    by_kind = {}
    for kind, args, kwargs in loom.directives:
        by_kind.setdefault(kind, []).append((args, kwargs))
    variants = {args[0] for args, _ in by_kind.get("variant", [])}
    check({"interposer", "tests", "cuda"} <= variants, f"variants {sorted(variants)}")
    dependencies = {args[0]: kwargs.get("when") for args, kwargs in by_kind.get("depends_on", [])}
    check(dependencies.get("mpi") == "+interposer", "depends_on('mpi', when='+interposer')")
    check(any(d.startswith("cmake@3.25") for d in dependencies), "depends_on cmake@3.25:")
    check(any(d.startswith("nlohmann-json") for d in dependencies), "depends_on nlohmann-json")
    check(any(d.startswith("zfp@1") for d in dependencies), "depends_on zfp@1:")
    check(any(d.startswith("c-blosc") for d in dependencies), "depends_on c-blosc")
    requirements = [args for args, _ in by_kind.get("requires", [])]
    check(any({"^openmpi", "^mpich"} <= set(r) for r in requirements),
          "requires one of ^openmpi, ^mpich")
    check(dependencies.get("cuda@12:") == "+cuda", "depends_on('cuda@12:', when='+cuda')")
    check(bool(by_kind.get("version")), "at least one version")

    known = cache_variables(source_dir)
    cases = {
        "openmpi": FakeSpec("openmpi", interposer=True, tests=False, cuda=False),
        "mpich": FakeSpec("mpich", interposer=True, tests=True, cuda=False),
        "~interposer": FakeSpec(None, interposer=False, tests=False, cuda=False),
        "+cuda": FakeSpec("openmpi", interposer=True, tests=False, cuda=True,
                          cuda_arch=types.SimpleNamespace(value=("80", "90"))),
    }
    for name, spec in cases.items():
        args = loom(spec).cmake_args()
        print(f"      cmake_args ({name}): {' '.join(args)}")
        defined = dict(a[2:].split("=", 1) for a in args)
        unknown = sorted(d for d in set(defined) - known if not d.startswith("CMAKE_"))
        check(not unknown, f"{name}: every -D is a Loom or CMake cache variable (unknown: {unknown})")
        check(defined.get("LOOM_CUDA") == ("ON" if spec.variants["cuda"] else "OFF"),
              f"{name}: LOOM_CUDA follows +cuda")
        if spec.variants["cuda"]:
            check(defined.get("CMAKE_CUDA_ARCHITECTURES") == "80;90", f"{name}: cuda_arch passed")
        if spec.mpi:
            check(defined.get("LOOM_MPI") == spec.mpi, f"{name}: LOOM_MPI={spec.mpi}")
            check(defined.get("LOOM_MPI_C_COMPILER", "").endswith("/mpicc"),
                  f"{name}: the provider's mpicc")
            check(defined.get("LOOM_MPIEXEC", "").endswith("/mpiexec"),
                  f"{name}: the provider's mpiexec")
        else:
            check(defined.get("LOOM_BUILD_INTERPOSER") == "OFF" and "LOOM_MPI" not in defined,
                  f"{name}: no MPI at all")

    print(f"check_spack_package: {len(failures)} failed" if failures
          else "check_spack_package: OK (stub import; Spack itself not run)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
