// Reference model of MPI matching and a differential driver that applies the same operation
// to an engine and to the model, reporting the first divergence. Shared by the randomised
// tests and the libFuzzer harness.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "loom/match.h"

namespace loom::match_test {

// Deliberately simple: two FIFO vectors, searched front to back, with MPI's rules written
// out field by field (no shared code with the engine).
class ReferenceModel {
 public:
  struct Item {
    int32_t source, tag;
    uint32_t context;
    uintptr_t id;
  };

  static bool receive_accepts(const Item& recv, int32_t msg_source, int32_t msg_tag,
                              uint32_t msg_context) {
    if (recv.context != msg_context) return false;
    if (recv.source != LOOM_MATCH_ANY_SOURCE && recv.source != msg_source) return false;
    if (recv.tag == LOOM_MATCH_ANY_TAG) return msg_tag >= 0;
    return recv.tag == msg_tag;
  }

  // Returns the matched message id, or 0 after queueing the receive.
  uintptr_t post(const Item& recv) {
    for (size_t i = 0; i < unexpected.size(); ++i)
      if (receive_accepts(recv, unexpected[i].source, unexpected[i].tag, unexpected[i].context))
        return take(unexpected, i);
    posted.push_back(recv);
    return 0;
  }
  uintptr_t arrive(const Item& msg) {
    for (size_t i = 0; i < posted.size(); ++i)
      if (receive_accepts(posted[i], msg.source, msg.tag, msg.context)) return take(posted, i);
    unexpected.push_back(msg);
    return 0;
  }
  bool cancel(const Item& recv) {
    for (size_t i = 0; i < posted.size(); ++i)
      if (posted[i].id == recv.id) {
        take(posted, i);
        return true;
      }
    return false;
  }
  // Oldest accepted unexpected message (index), or -1.
  long probe(const Item& recv) const {
    for (size_t i = 0; i < unexpected.size(); ++i)
      if (receive_accepts(recv, unexpected[i].source, unexpected[i].tag, unexpected[i].context))
        return static_cast<long>(i);
    return -1;
  }
  uintptr_t take(std::deque<Item>& q, size_t i) {
    const uintptr_t id = q[i].id;
    q.erase(q.begin() + static_cast<long>(i));
    return id;
  }

  std::deque<Item> posted, unexpected;
};

enum class OpKind : uint8_t { kPost, kArrive, kCancel, kProbe, kMprobe, kCheck };

struct Op {
  OpKind kind;
  int32_t source, tag;
  uint32_t context;
  size_t pick;  // kCancel: which recent receive to cancel (0 = the latest queued one)
};

// Applies operations to both sides. Returns false and sets error() at the first difference.
class Differential {
 public:
  explicit Differential(loom_match_engine* engine) : engine_(engine) {}

  bool apply(const Op& op) {
    ++step_;
    switch (op.kind) {
      case OpKind::kPost:
        return do_post(op);
      case OpKind::kArrive:
        return do_arrive(op);
      case OpKind::kCancel:
        return do_cancel(op);
      case OpKind::kProbe:
      case OpKind::kMprobe:
        return do_probe(op, op.kind == OpKind::kMprobe);
      case OpKind::kCheck:
        return check_queues();
    }
    return fail("unknown op");
  }

  // Full comparison of both queues, in order, plus the statistics lengths.
  bool check_queues() {
    if (!same_queue(LOOM_MATCH_POSTED, model_.posted, "posted")) return false;
    if (!same_queue(LOOM_MATCH_UNEXPECTED, model_.unexpected, "unexpected")) return false;
    loom_match_stats st;
    loom_match_get_stats(engine_, &st);
    if (st.posted_length != model_.posted.size() ||
        st.unexpected_length != model_.unexpected.size())
      return fail("stats lengths " + std::to_string(st.posted_length) + "/" +
                  std::to_string(st.unexpected_length) + " vs model " +
                  std::to_string(model_.posted.size()) + "/" +
                  std::to_string(model_.unexpected.size()));
    return true;
  }

  const std::string& error() const { return error_; }
  uint64_t step() const { return step_; }
  uint64_t matches() const { return matches_; }
  uint64_t nomem() const { return nomem_; }
  const ReferenceModel& model() const { return model_; }
  size_t posted_len() const { return model_.posted.size(); }
  size_t unexpected_len() const { return model_.unexpected.size(); }
  size_t issued_receives() const { return receives_.size(); }

 private:
  bool fail(const std::string& what) {
    error_ = "step " + std::to_string(step_) + ": " + what;
    return false;
  }
  static std::string show(int32_t s, int32_t t, uint32_t c) {
    return "(src " + std::to_string(s) + ", tag " + std::to_string(t) + ", ctx " +
           std::to_string(c) + ")";
  }
  void* as_user(uintptr_t id) { return reinterpret_cast<void*>(id); }

  bool do_post(const Op& op) {
    const ReferenceModel::Item recv{op.source, op.tag, op.context, next_id_++};
    loom_match_envelope got{};
    const int rc = loom_match_post(engine_, op.source, op.tag, op.context, as_user(recv.id), &got);
    if (rc == LOOM_MATCH_ERR_NOMEM) {
      ++nomem_;
      return true;  // the engine promises an unchanged state; later checks verify it
    }
    const uintptr_t want = model_.post(recv);
    if (want == 0) receives_.push_back(recv);
    const uintptr_t have = rc == LOOM_MATCH_MATCHED ? reinterpret_cast<uintptr_t>(got.user) : 0;
    if (rc != LOOM_MATCH_MATCHED && rc != LOOM_MATCH_QUEUED)
      return fail("post rc " + std::to_string(rc));
    if (want != have)
      return fail("post " + show(op.source, op.tag, op.context) + " matched message " +
                  std::to_string(have) + ", model " + std::to_string(want));
    matches_ += want != 0;
    return true;
  }

  bool do_arrive(const Op& op) {
    const ReferenceModel::Item msg{op.source, op.tag, op.context, next_id_++};
    loom_match_envelope got{};
    const int rc = loom_match_arrive(engine_, op.source, op.tag, op.context, as_user(msg.id), &got);
    if (rc == LOOM_MATCH_ERR_NOMEM) {
      ++nomem_;
      return true;
    }
    const uintptr_t want = model_.arrive(msg);
    const uintptr_t have = rc == LOOM_MATCH_MATCHED ? reinterpret_cast<uintptr_t>(got.user) : 0;
    if (want != have)
      return fail("arrive " + show(op.source, op.tag, op.context) + " matched receive " +
                  std::to_string(have) + ", model " + std::to_string(want));
    matches_ += want != 0;
    return true;
  }

  bool do_cancel(const Op& op) {
    if (receives_.empty()) return true;
    // Mostly recent receives, so that some are still queued when cancelled.
    const size_t window = receives_.size() < 64 ? receives_.size() : 64;
    const ReferenceModel::Item& recv = receives_[receives_.size() - 1 - op.pick % window];
    const int rc =
        loom_match_cancel(engine_, recv.source, recv.tag, recv.context, as_user(recv.id));
    const bool want = model_.cancel(recv);
    if ((rc == LOOM_MATCH_MATCHED) != want)
      return fail("cancel of receive " + std::to_string(recv.id) + " rc " + std::to_string(rc));
    return true;
  }

  bool do_probe(const Op& op, bool remove) {
    const ReferenceModel::Item recv{op.source, op.tag, op.context, 0};
    loom_match_envelope got{};
    const int rc = remove ? loom_match_mprobe(engine_, op.source, op.tag, op.context, &got)
                          : loom_match_probe(engine_, op.source, op.tag, op.context, &got);
    const long idx = model_.probe(recv);
    if ((rc == LOOM_MATCH_MATCHED) != (idx >= 0))
      return fail(std::string(remove ? "mprobe " : "probe ") + show(op.source, op.tag, op.context) +
                  " rc " + std::to_string(rc));
    if (idx < 0) return true;
    const ReferenceModel::Item& m = model_.unexpected[static_cast<size_t>(idx)];
    if (reinterpret_cast<uintptr_t>(got.user) != m.id || got.source != m.source ||
        got.tag != m.tag || got.context != m.context)
      return fail("probe returned message " +
                  std::to_string(reinterpret_cast<uintptr_t>(got.user)) + " " +
                  show(got.source, got.tag, got.context) + ", model " + std::to_string(m.id) + " " +
                  show(m.source, m.tag, m.context));
    if (remove) model_.take(model_.unexpected, static_cast<size_t>(idx));
    return true;
  }

  bool same_queue(loom_match_queue which, const std::deque<ReferenceModel::Item>& want,
                  const char* name) {
    std::vector<loom_match_envelope> have;
    loom_match_foreach(
        engine_, which,
        [](const loom_match_envelope* e, void* arg) {
          static_cast<std::vector<loom_match_envelope>*>(arg)->push_back(*e);
          return 0;
        },
        &have);
    if (have.size() != want.size())
      return fail(std::string(name) + " queue holds " + std::to_string(have.size()) +
                  " entries, model " + std::to_string(want.size()));
    for (size_t i = 0; i < have.size(); ++i)
      if (reinterpret_cast<uintptr_t>(have[i].user) != want[i].id ||
          have[i].source != want[i].source || have[i].tag != want[i].tag ||
          have[i].context != want[i].context)
        return fail(std::string(name) + " queue differs at position " + std::to_string(i));
    return true;
  }

  loom_match_engine* engine_;
  ReferenceModel model_;
  std::vector<ReferenceModel::Item> receives_;  // every receive that was queued
  uintptr_t next_id_ = 1;
  uint64_t step_ = 0, matches_ = 0, nomem_ = 0;
  std::string error_;
};

// Values whose low bits collide in the fuzzy windows (4/8/16 bits per field), so prefilter false
// positives are exercised, plus negative (internal) tags.
inline int32_t pick_tag(uint64_t r) {
  static const int32_t kTags[] = {0, 1, 2, 3, 5, 7, 256 + 1, 65536 + 2, 1 << 20, -1, -2, -257};
  return kTags[r % (sizeof kTags / sizeof kTags[0])];
}
inline int32_t pick_source(uint64_t r) {
  // Kept below a few thousand: perpeer (like ob1) scans an array as long as the largest
  // source for every ANY_SOURCE receive.
  static const int32_t kSources[] = {0, 1, 2, 3, 16 + 1, 256 + 2, 4096 + 3};
  return kSources[r % (sizeof kSources / sizeof kSources[0])];
}

}  // namespace loom::match_test
