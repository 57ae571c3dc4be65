#include "runtime/counters.hpp"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace loom::runtime {
using detail::kMaxCounters;
using detail::ThreadCounters;
namespace {

struct Entry {
  std::string area, group, key;
  Unit unit;
};

struct Area {
  std::string name;
  AreaFormat format;
};

// Names, areas and every thread's block; blocks live until exit so that counts of finished
// threads still add up.
struct Registry {
  std::mutex mutex;
  std::vector<Entry> entries;
  std::vector<Area> areas;
  std::vector<std::unique_ptr<ThreadCounters>> blocks;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: counted into until the process ends
  return *r;
}

Area& area_named(Registry& r, const char* name) {
  for (Area& a : r.areas)
    if (a.name == name) return a;
  r.areas.push_back({name, {}});
  return r.areas.back();
}

// "area.group.key", spaces in a printed name read as '_' ("p2p.online_trials.kept").
std::string full_name(const Entry& e) {
  std::string name = e.group.empty() ? e.area + "." + e.key : e.area + "." + e.group + "." + e.key;
  for (char& c : name)
    if (c == ' ') c = '_';
  return name;
}

}  // namespace

ThreadCounters* detail::new_thread_counters() {
  auto block = std::make_unique<ThreadCounters>();
  ThreadCounters* raw = block.get();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.blocks.push_back(std::move(block));
  return raw;
}

namespace {

uint64_t sum_locked(Registry& r, int slot) {
  uint64_t sum = 0;
  for (const auto& block : r.blocks) sum += block->value[slot].load(std::memory_order_relaxed);
  return sum;
}

}  // namespace

Counter register_counter(const char* area, const char* group, const char* key, Unit unit) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.entries.size(); ++i)
    if (r.entries[i].area == area && r.entries[i].group == group && r.entries[i].key == key)
      return Counter(static_cast<int>(i));
  if (r.entries.size() >= static_cast<size_t>(kMaxCounters)) {
    std::fprintf(stderr, "loom: internal error: more than %d counters registered (%s.%s.%s)\n",
                 kMaxCounters, area, group, key);
    std::abort();
  }
  area_named(r, area);
  r.entries.push_back({area, group, key, unit});
  return Counter(static_cast<int>(r.entries.size() - 1));
}

bool format_area(const char* area, AreaFormat format) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  area_named(r, area).format = format;
  return true;
}

uint64_t total(Counter which) {
  if (!which.valid()) return 0;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return sum_locked(r, which.slot());
}

Counter find_counter(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.entries.size(); ++i)
    if (full_name(r.entries[i]) == name) return Counter(static_cast<int>(i));
  return Counter();
}

uint64_t area_total(const char* area) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  uint64_t sum = 0;
  for (size_t i = 0; i < r.entries.size(); ++i)
    if (r.entries[i].area == area) sum += sum_locked(r, static_cast<int>(i));
  return sum;
}

namespace {
// One area's counters, " group key=value ..." with " |" between groups.
std::string format_counters(Registry& r, const std::string& area) {
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string line;
  const std::string* group = nullptr;
  char text[96];
  for (size_t i = 0; i < r.entries.size(); ++i) {
    const Entry& e = r.entries[i];
    if (e.area != area) continue;
    if (!group || *group != e.group) {
      if (group) line += " |";
      if (!e.group.empty()) line += " " + e.group;
      group = &e.group;
    }
    const uint64_t value = sum_locked(r, static_cast<int>(i));
    if (e.unit == Unit::Nanoseconds)
      std::snprintf(text, sizeof text, " %s=%.6fs", e.key.c_str(),
                    static_cast<double>(value) * 1e-9);
    else
      std::snprintf(text, sizeof text, " %s=%" PRIu64, e.key.c_str(), value);
    line += text;
  }
  return line;
}
}  // namespace

std::string format_report(int rank) {
  Registry& r = registry();
  std::vector<Area> areas;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    areas = r.areas;
  }
  std::stable_sort(areas.begin(), areas.end(),
                   [](const Area& a, const Area& b) { return a.format.order < b.format.order; });
  // The format functions may read counters (and so take the lock themselves).
  std::string out;
  for (const Area& area : areas) {
    if (area.format.shown && !area.format.shown()) continue;
    char head[64];
    std::snprintf(head, sizeof head, "[loom] rank %d ", rank);
    out.append(head).append(area.name).append(":");
    if (area.format.lead) out.append(" ").append(area.format.lead());
    out.append(format_counters(r, area.name));
    if (area.format.tail) {
      const std::string tail = area.format.tail();
      if (!tail.empty()) out.append(" | ").append(tail);
    }
    out += "\n";
  }
  return out;
}

}  // namespace loom::runtime
