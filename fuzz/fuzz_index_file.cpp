// Fuzzes simkit::load_index (include/simkit/index.hpp) and what a loaded index must then do.
//
// Input: one mode byte, then the bytes of the index file.
//   mode % 3 == 0  the bytes as they are. Mutations mostly stop at the magic, the trailer's
//                  size or the checksum (src/index/index_file.hpp), which is what this mode tests.
//   mode % 3 == 1  re-sealed: the trailer's size and checksum are rewritten to fit the mutated
//                  bytes (when there are at least 32), so the checks behind the checksum -- the
//                  version, the section table, each index type's own sections -- see them.
//   mode % 3 == 2  as 1, and the magic and format version are restored too.
//
// A file load_index accepts must then search (two queries, k = 3, unrestricted and with an
// allow-list), save, and load again into an index of the same kind, shape and answers. Refusals
// must be simkit::Error(io); any other exception, a crash or a sanitizer report is a finding.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/error.hpp>
#include <simkit/index.hpp>

#include "fuzz_support.hpp"
#include "index/index_file.hpp"

namespace {

using simkit::fuzz::check;
using simkit::fuzz::fail;

constexpr unsigned char kMagic[8] = {'S', 'I', 'M', 'K', 'I', 'D', 'X', '\n'};

void reseal(std::vector<unsigned char>& file, bool restore_header) {
  const size_t n = file.size();
  if (n < 32) return;
  if (restore_header) {
    std::memcpy(file.data(), kMagic, 8);
    const uint32_t version = simkit::detail::kIndexFileVersion;
    std::memcpy(file.data() + 8, &version, 4);
  }
  const uint64_t total = n;
  std::memcpy(file.data() + n - 16, &total, 8);
  simkit::detail::Checksum64 sum;
  sum.update(file.data(), n - 8);
  const uint64_t digest = sum.digest();
  std::memcpy(file.data() + n - 8, &digest, 8);
}

std::unique_ptr<simkit::Index> load(const std::string& path, bool must_succeed) {
  try {
    return simkit::load_index(path);
  } catch (const simkit::Error& e) {
    simkit::fuzz::check_message(e);
    if (must_succeed) fail(std::string("a saved index does not load again: ") + e.what());
    check(e.code() == simkit::ErrorCode::io, std::string("load_index refused a file with a code other than io (") +
                                                 simkit::to_string(e.code()) + "): " + e.what());
    return nullptr;
  }
}

struct Answers {
  simkit::IndexSearchResult all, allowed;
  bool ok = false;
};

/// Two queries, k = 3, without and with an allow-list; ok = false when the index refused the
/// search with a simkit::Error (an index that loads but cannot search is reported by the caller
/// comparing two copies, not here: some refusals are the contract, e.g. a query with no data).
Answers search(const simkit::Index& index) {
  Answers a;
  const int64_t dim = index.dim();
  if (dim > 4096) return a;  // a huge query per run would only slow the fuzzer down
  simkit::Context ctx;
  ctx.device = simkit::Device::cpu;
  ctx.threads = 1;
  simkit::Matrix<float> q(2, dim);
  for (int64_t i = 0; i < q.size(); ++i) q.data()[i] = std::sin(0.7f * static_cast<float>(i) + 0.3f);
  simkit::SearchParams sp;
  try {
    a.all = index.search(ctx, q.view(), 3, sp);
    const std::vector<int64_t> allow = {0, 1, 2, 5};
    sp.allowed = simkit::ArrayView<const int64_t>(allow);
    a.allowed = index.search(ctx, q.view(), 3, sp);
  } catch (const simkit::Error& e) {
    simkit::fuzz::check_message(e);
    check(e.code() == simkit::ErrorCode::invalid_argument || e.code() == simkit::ErrorCode::unsupported,
          std::string("search of a loaded index failed with ") + simkit::to_string(e.code()) + ": " + e.what());
    return a;
  }
  for (const auto* r : {&a.all, &a.allowed}) {
    check(r->ids.rows() == 2 && r->ids.cols() == 3 && r->values.rows() == 2 && r->values.cols() == 3,
          "search result of the wrong shape");
    for (int64_t i = 0; i < r->ids.size(); ++i) check(r->ids.data()[i] >= -1, "a search returned a negative id");
  }
  for (int64_t i = 0; i < a.allowed.ids.size(); ++i) {
    const int64_t id = a.allowed.ids.data()[i];
    check(id == -1 || id == 0 || id == 1 || id == 2 || id == 5, "a restricted search returned an id not allowed");
  }
  a.ok = true;
  return a;
}

bool same(const simkit::IndexSearchResult& x, const simkit::IndexSearchResult& y) {
  return x.ids.size() == y.ids.size() &&
         std::memcmp(x.ids.data(), y.ids.data(), sizeof(int64_t) * static_cast<size_t>(x.ids.size())) == 0 &&
         std::memcmp(x.values.data(), y.values.data(), sizeof(float) * static_cast<size_t>(x.values.size())) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int mode = data[0] % 3;
  std::vector<unsigned char> file(data + 1, data + size);
  if (mode != 0) reseal(file, mode == 2);

  static const std::string in = simkit::fuzz::scratch_path("in.simkit");
  static const std::string out = simkit::fuzz::scratch_path("out.simkit");
  simkit::fuzz::write_file(in, file.data(), file.size());

  const std::unique_ptr<simkit::Index> index = load(in, false);
  if (!index) return 0;

  const int64_t n = index->size();
  check(n >= 0 && index->dim() >= 1, "a loaded index of negative size or dimension");
  (void)index->memory_bytes();
  (void)index->is_trained();
  (void)index->description();
  check(index->next_id() >= 0, "a loaded index with a negative next id");
  const Answers first = search(*index);

  index->save(out);
  const std::unique_ptr<simkit::Index> again = load(out, true);
  check(again->type() == index->type() && again->description() == index->description() &&
            again->dim() == index->dim() && again->metric() == index->metric() && again->size() == n &&
            again->next_id() == index->next_id() && again->is_trained() == index->is_trained(),
        "save + load changed the index: " + index->description() + " -> " + again->description());
  const Answers second = search(*again);
  check(first.ok == second.ok, "save + load changed whether the index can be searched");
  if (first.ok)
    check(same(first.all, second.all) && same(first.allowed, second.allowed), "save + load changed the answers");
  return 0;
}
