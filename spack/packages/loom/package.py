# Spack package for Loom (docs/install.md, "Spack"). Loom has no public repository to fetch
# from yet, so Spack builds it from a checkout:
#   spack repo add <checkout>/spack
#   spack develop --path <checkout> loom@=main
#   spack install loom@=main ^openmpi        (or ^mpich; one Spack install per MPI)
# Each install has the layout of a hand-made one (lib/loom/<mpi>/libloom.so, bin/loomrun, ...).
# Written for Spack 0.23 or later (language dependencies "c" and "cxx", requires(policy=...)).

from spack.package import *


class Loom(CMakePackage, CudaPackage):
    """Loom: an MPI interposer (LD_PRELOAD over Open MPI or MPICH) that accelerates
    non-contiguous datatypes, plus MPI-free libraries such as the message-matching engine
    libloom_match."""

    version("main")

    # The MPI provider is Spack's usual virtual dependency: `^openmpi` or `^mpich` picks it.
    variant(
        "interposer",
        default=True,
        description="Build libloom.so, loomrun and loom-bench against the MPI provider "
        "(~interposer: the MPI-free libraries only)",
    )
    variant("tests", default=False, description="Build Loom's test suites (needs googletest)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("fortran", type="build", when="+tests+interposer")
    depends_on("cmake@3.25:", type="build")
    # The engines the interposer and the halo library need; the MPI-free matching library
    # needs none of them (~interposer builds it with a C/C++ compiler and CMake alone).
    # The method model's calibration files (model/).
    depends_on("nlohmann-json@3:", type="build", when="+interposer")
    # The codec engine (codec/, docs/codec.md).
    depends_on("zfp@1:", when="+interposer")
    depends_on("c-blosc@1.14:", when="+interposer")
    # The placement engine's topology (place/), for the halo library.
    depends_on("hwloc@2:", when="+interposer")
    depends_on("pkgconfig", type="build", when="+interposer")  # finds c-blosc and hwloc
    depends_on("googletest", type="build", when="+tests")
    depends_on("mpi", when="+interposer")
    # Loom knows the ABI, Fortran bindings and launcher of these two MPI providers only.
    requires(
        "^openmpi",
        "^mpich",
        policy="one_of",
        when="+interposer",
        msg="Loom's interposer supports Open MPI and MPICH",
    )

    # CudaPackage brings +cuda and cuda_arch: the CUDA executor for device buffers
    # (docs/gpu.md), its runtime linked statically.
    depends_on("cuda@12:", when="+cuda")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("LOOM_BUILD_INTERPOSER", "interposer"),
            self.define_from_variant("LOOM_BUILD_TESTS", "tests"),
            self.define_from_variant("LOOM_CUDA", "cuda"),
        ]
        if spec.satisfies("+cuda"):
            archs = [a for a in spec.variants["cuda_arch"].value if a != "none"]
            if archs:
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)))
        if spec.satisfies("+interposer"):
            args += [
                self.define("LOOM_MPI", self.mpi_flavour()),
                self.define("LOOM_MPI_C_COMPILER", spec["mpi"].mpicc),
                self.define("LOOM_MPIEXEC", join_path(spec["mpi"].prefix.bin, "mpiexec")),
            ]
        return args

    def mpi_flavour(self):
        return "mpich" if self.spec.satisfies("^mpich") else "openmpi"

    def setup_run_environment(self, env):
        # loomrun wraps the provider's mpiexec, not whichever one is first on PATH.
        if self.spec.satisfies("+interposer"):
            env.set("LOOM_MPIEXEC", join_path(self.spec["mpi"].prefix.bin, "mpiexec"))
            env.set("LOOM_MPI", self.mpi_flavour())
