#include "bench/p2p/app_particle.hpp"

#include <algorithm>
#include <cstring>

#include "bench/common/p2p_common.hpp"

namespace loom::bench::particle {

namespace {

constexpr int kFields = 6;
constexpr int kBlock[kFields] = {3, 3, 3, 1, 1, 1};  // doubles per atom: x, v, f, q, type, mass
constexpr int kAtomsPerLeaving = 4;                  // a quarter of the atoms leave per step

uint64_t field_seed(uint64_t seed, int rank, int field) {
  return seed * 64 + static_cast<uint64_t>(rank) * 8 + static_cast<uint64_t>(field);
}

}  // namespace

Exchange::Exchange(int leaving, int rank, const char* tool)
    : n_(leaving), natoms_(kAtomsPerLeaving * leaving), rank_(rank) {
  if (n_ <= 0) {
    std::fprintf(stderr, "%s: the particle exchange needs atoms to send\n", tool);
    std::exit(2);
  }
  atoms_.resize(static_cast<size_t>(n_));
  atoms3_.resize(static_cast<size_t>(n_));
  for (int f = 0; f < kFields; ++f) {
    fields_[f].resize(static_cast<size_t>(kBlock[f]) * static_cast<size_t>(natoms_));
    received_[f].resize(static_cast<size_t>(kBlock[f]) * static_cast<size_t>(n_));
  }
}

std::string Exchange::shape() const {
  return format(
      "%d of %d atoms: struct of 6 indexed_block (3,3,3,1,1,1 doubles) at absolute "
      "addresses, from MPI_BOTTOM",
      n_, natoms_);
}

// The atoms that left this step: n distinct indices in storage order, about one in four, as a
// scan of the atom arrays finds them.
void Exchange::choose_atoms(uint64_t seed) {
  uint32_t state = static_cast<uint32_t>(seed * 2654435761u + 12345u);
  int taken = 0;
  for (int i = 0; i < natoms_ && taken < n_; ++i) {
    state = state * 1103515245u + 12345u;
    if ((state >> 16) % kAtomsPerLeaving == 0 || natoms_ - i == n_ - taken) {
      atoms_[static_cast<size_t>(taken)] = i;
      atoms3_[static_cast<size_t>(taken)] = 3 * i;
      ++taken;
    }
  }
}

Exchange::Types Exchange::build(bool host) {
  const auto commit = host ? &PMPI_Type_commit : &MPI_Type_commit;
  const auto release_type = host ? &PMPI_Type_free : &MPI_Type_free;
  Types t;
  MPI_Datatype one, three, c1, c3;
  MPI_Type_create_indexed_block(n_, 1, atoms_.data(), MPI_DOUBLE, &one);
  MPI_Type_create_indexed_block(n_, 3, atoms3_.data(), MPI_DOUBLE, &three);
  MPI_Type_contiguous(n_, MPI_DOUBLE, &c1);
  MPI_Type_contiguous(3 * n_, MPI_DOUBLE, &c3);
  MPI_Datatype send_types[kFields], recv_types[kFields];
  MPI_Aint send_at[kFields], recv_at[kFields];
  int lens[kFields];
  for (int f = 0; f < kFields; ++f) {
    send_types[f] = kBlock[f] == 3 ? three : one;
    recv_types[f] = kBlock[f] == 3 ? c3 : c1;
    MPI_Get_address(fields_[f].data(), &send_at[f]);
    MPI_Get_address(received_[f].data(), &recv_at[f]);
    lens[f] = 1;
  }
  MPI_Type_create_struct(kFields, lens, send_at, send_types, &t.send);
  commit(&t.send);
  MPI_Type_create_struct(kFields, lens, recv_at, recv_types, &t.recv);
  commit(&t.recv);
  for (MPI_Datatype* inner : {&one, &three, &c1, &c3}) release_type(inner);
  return t;
}

void Exchange::release(Types& t, bool host) {
  const auto release_type = host ? &PMPI_Type_free : &MPI_Type_free;
  release_type(&t.send);
  release_type(&t.recv);
}

void Exchange::fill(uint64_t seed) {
  for (int f = 0; f < kFields; ++f) {
    fill_pattern(reinterpret_cast<unsigned char*>(fields_[f].data()),
                 static_cast<int64_t>(fields_[f].size() * sizeof(double)),
                 field_seed(seed, rank_, f));
    std::fill(received_[f].begin(), received_[f].end(), -1.0);
  }
}

std::string Exchange::check(uint64_t seed) const {
  const int peer = 1 - rank_;
  for (int f = 0; f < kFields; ++f) {
    std::vector<double> sent(fields_[f].size());
    fill_pattern(reinterpret_cast<unsigned char*>(sent.data()),
                 static_cast<int64_t>(sent.size() * sizeof(double)), field_seed(seed, peer, f));
    const size_t b = static_cast<size_t>(kBlock[f]);
    for (size_t i = 0; i < atoms_.size(); ++i)
      if (std::memcmp(&received_[f][b * i], &sent[b * static_cast<size_t>(atoms_[i])],
                      b * sizeof(double)) != 0)
        return format("rank %d: field %d of atom %zu (index %d) arrived wrong", rank_, f, i,
                      atoms_[i]);
  }
  return "";
}

double Exchange::run_round(bool host, bool rebuilt, int messages, int life, uint64_t seed,
                           std::string* errors) {
  const p2p::Path& path = host ? p2p::host_path() : p2p::loom_path();
  const int peer = 1 - rank_;
  fill(seed);
  const uint64_t atom_seed = seed * 1000;
  choose_atoms(atom_seed);
  Types kept;
  if (!rebuilt) kept = build(host);
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_seconds();
  int step = 0;
  for (int done = 0; done < messages; done += life, ++step) {
    Types t = kept;
    if (rebuilt) {
      if (step) choose_atoms(atom_seed + static_cast<uint64_t>(step));
      t = build(host);
    }
    for (int i = 0, trips = std::min(life, messages - done); i < trips; ++i) {
      if (rank_ == 0) {
        path.send(MPI_BOTTOM, 1, t.send, peer, path.tag, MPI_COMM_WORLD);
        path.recv(MPI_BOTTOM, 1, t.recv, peer, path.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        path.recv(MPI_BOTTOM, 1, t.recv, peer, path.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        path.send(MPI_BOTTOM, 1, t.send, peer, path.tag, MPI_COMM_WORLD);
      }
    }
    if (rebuilt) release(t, host);
  }
  const double seconds = (now_seconds() - t0) / (2.0 * messages);
  if (!rebuilt) release(kept, host);
  const std::string wrong = p2p::gather_rank_messages(check(seed), rank_, 2);
  if (!wrong.empty()) append_error(errors, wrong + format(" (%s path, after round)", path.name));
  return seconds;
}

// The floor packs from and unpacks to a non-null base with the types shifted by its address:
// MPICH 4.0 rejects MPI_Pack and MPI_Unpack of MPI_BOTTOM as a null buffer, which MPI allows.
p2p::Floor Exchange::floor(bool quick) {
  choose_atoms(1);
  Types t = build(false);
  static unsigned char anchor;
  MPI_Aint base = 0;
  MPI_Get_address(&anchor, &base);
  const auto shifted = [base](MPI_Datatype type) {
    int one = 1;
    MPI_Aint displacement = -base;
    MPI_Datatype out = MPI_DATATYPE_NULL;
    MPI_Type_create_struct(1, &one, &displacement, &type, &out);
    MPI_Type_commit(&out);
    return out;
  };
  Types from_base{shifted(t.send), shifted(t.recv)};
  const int bytes = static_cast<int>(packed_bytes());
  std::vector<unsigned char> packed(static_cast<size_t>(bytes));
  const int samples = quick ? 3 : 9;
  auto pack_with = [&](decltype(&MPI_Pack) pack) {
    return p2p::median_call_seconds(
        [&] {
          int position = 0;
          pack(&anchor, 1, from_base.send, packed.data(), bytes, &position, MPI_COMM_WORLD);
        },
        samples);
  };
  auto unpack_with = [&](decltype(&MPI_Unpack) unpack) {
    return p2p::median_call_seconds(
        [&] {
          int position = 0;
          unpack(packed.data(), bytes, &position, &anchor, 1, from_base.recv, MPI_COMM_WORLD);
        },
        samples);
  };
  PMPI_Barrier(MPI_COMM_WORLD);
  p2p::Floor f;
  f.pack = std::min(pack_with(&MPI_Pack), pack_with(&PMPI_Pack));
  f.unpack = std::min(unpack_with(&MPI_Unpack), unpack_with(&PMPI_Unpack));
  PMPI_Barrier(MPI_COMM_WORLD);
  release(from_base, false);
  release(t, false);
  return f;
}

}  // namespace loom::bench::particle
