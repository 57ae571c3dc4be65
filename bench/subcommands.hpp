// Entry points of the loom-bench subcommands; argv[0] is the subcommand name.
#pragma once

namespace loom::bench {
int run_pack(int argc, char** argv);
int run_match(int argc, char** argv);
int run_measure(int argc, char** argv);
int run_pingpong(int argc, char** argv);
int run_halo(int argc, char** argv);
int run_alltoall(int argc, char** argv);
int run_app(int argc, char** argv);
int run_rma(int argc, char** argv);
int run_reorder(int argc, char** argv);
}  // namespace loom::bench
