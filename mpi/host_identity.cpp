#include "mpi/host_identity.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::mpi {
namespace {

std::string library_version_text() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (PMPI_Get_library_version(text, &length) != MPI_SUCCESS) return {};
  return std::string(text, static_cast<size_t>(std::max(length, 0)));
}

}  // namespace

const char* host_mpi_family() {
  static const char* family = [] {
    const std::string text = library_version_text();
    if (text.find("Open MPI") != std::string::npos) return "openmpi";
    if (text.find("MPICH") != std::string::npos) return "mpich";
#ifdef OPEN_MPI
    return "openmpi";  // an unfamiliar banner: trust the headers Loom was built with
#else
    return "mpich";
#endif
  }();
  return family;
}

bool host_is_mpich() {
  static const bool mpich = std::strcmp(host_mpi_family(), "mpich") == 0;
  return mpich;
}

std::string host_transport_settings() {
  // Only the running host's own settings: another MPI's variables change nothing here.
  static constexpr std::string_view kOpenMpi[] = {"OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl",
                                                  "UCX_", "FI_"};
  static constexpr std::string_view kMpich[] = {"MPIR_CVAR_", "MPICH_", "UCX_", "FI_"};
  const bool openmpi = std::strcmp(host_mpi_family(), "openmpi") == 0;
  const std::span<const std::string_view> prefixes =
      openmpi ? std::span<const std::string_view>(kOpenMpi)
              : std::span<const std::string_view>(kMpich);
  std::vector<std::string> found;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    if (name.find("HOSTNAME") != std::string_view::npos) continue;
    for (const std::string_view prefix : prefixes)
      if (name.starts_with(prefix)) {
        found.emplace_back(text);
        break;
      }
  }
  std::sort(found.begin(), found.end());
  std::string joined;
  for (const std::string& setting : found) joined += (joined.empty() ? "" : " ") + setting;
  return joined;
}

std::string host_mpi_version() {
  const std::string text = library_version_text();
  // Open MPI: "Open MPI v4.1.4, package: ..."; MPICH: "MPICH Version:\t4.0.2\n...".
  std::string first = text.substr(0, text.find_first_of(",\n"));
  if (const size_t label = first.find(" Version:"); label != std::string::npos)
    first.erase(label, std::strlen(" Version:"));
  std::string squeezed;
  for (char c : first) {
    const bool space = c == ' ' || c == '\t';
    if (space && (squeezed.empty() || squeezed.back() == ' ')) continue;
    squeezed.push_back(space ? ' ' : c);
  }
  while (!squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
  return squeezed.empty() ? std::string("unknown MPI") : squeezed;
}

}  // namespace loom::mpi
