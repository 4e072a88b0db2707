// The id map (src/index/id_map.hpp) against a std::map model under random writes: the identity
// range of ids 0 .. n-1 at their own slots and the hash entries must answer as one map, through
// appends, removals anywhere in the range, rows moved to other slots, and reloads.

#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <simkit/error.hpp>

#include "index/id_map.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

void expect_same(const detail::IdMap& m, const std::map<int64_t, int64_t>& model, int64_t probe_to,
                 const std::string& when) {
  ASSERT_EQ(m.size(), int64_t(model.size())) << when;
  for (int64_t id = -2; id < probe_to; ++id) {
    const auto it = model.find(id);
    ASSERT_EQ(m.contains(id), it != model.end()) << when << ": id " << id;
    const std::optional<int64_t> slot = m.find(id);
    ASSERT_EQ(slot.has_value(), it != model.end()) << when << ": id " << id;
    if (slot) {
      ASSERT_EQ(*slot, it->second) << when << ": id " << id;
    }
  }
}

TEST(IdMap, RangeAndHashAnswerAsOneMap) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("SIMKIT_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  detail::IdMap m;
  std::map<int64_t, int64_t> model;
  for (int step = 0; step < 4000; ++step) {
    const int op = int(rng() % 10);
    if (op < 5) {  // default ids appended at their own slots (what flat's first adds do)
      const std::vector<int64_t> ids = m.assign({}, int64_t(1 + rng() % 7));
      for (int64_t id : ids) {
        const int64_t slot = rng() % 8 == 0 ? int64_t(rng() % 50) : id;  // now and then elsewhere
        m.set(id, slot);
        model[id] = slot;
      }
    } else if (op < 7 && !model.empty()) {  // a removal anywhere
      auto it = model.begin();
      std::advance(it, long(rng() % model.size()));
      const int64_t id = it->first, slot = it->second;
      const std::optional<int64_t> got = m.erase(id);
      ASSERT_TRUE(got.has_value()) << "erase " << id;
      ASSERT_EQ(*got, slot);
      model.erase(it);
    } else if (op < 9 && !model.empty()) {  // a held id moved to another slot, or back to its own
      auto it = model.begin();
      std::advance(it, long(rng() % model.size()));
      const int64_t slot = rng() % 2 ? it->first : int64_t(rng() % 100);
      m.set(it->first, slot);
      it->second = slot;
    } else {  // an id not held: no effect
      ASSERT_FALSE(m.erase(m.next() + 5).has_value());
    }
    if (step % 97 == 0) expect_same(m, model, m.next() + 3, "step " + std::to_string(step));
  }
  expect_same(m, model, m.next() + 3, "end");
  // A reload from the held ids (id order, as index files keep them) answers the same.
  std::vector<int64_t> ids, slots;
  for (const auto& [id, slot] : model) ids.push_back(id), slots.push_back(slot);
  detail::IdMap loaded;
  loaded.reset(ids, slots, m.next(), "model");
  expect_same(loaded, model, m.next() + 3, "reloaded");
  EXPECT_EQ(loaded.next(), m.next());
}

TEST(IdMap, DefaultIdsHoldNoHashEntries) {
  detail::IdMap m;
  for (int64_t id : m.assign({}, 100000)) m.set(id, id);
  EXPECT_EQ(m.size(), 100000);
  EXPECT_EQ(m.memory_bytes(), sizeof(void*)) << "the range needs no node";  // one empty bucket
  EXPECT_EQ(*m.find(99999), 99999);
  ASSERT_EQ(*m.erase(50000), 50000);  // the ids above the removed one become entries
  EXPECT_FALSE(m.contains(50000));
  EXPECT_EQ(*m.find(50001), 50001);
  EXPECT_EQ(m.size(), 99999);
  EXPECT_GT(m.memory_bytes(), size_t(49999) * 32);
  // A reload refuses an id stored twice, inside the range or past it.
  detail::IdMap r;
  EXPECT_THROW(r.reset({0, 1, 1}, 5, "f"), Error);
  EXPECT_THROW(r.reset({0, 1, 2, 1}, 5, "f"), Error);
  EXPECT_THROW(r.reset({0, 7}, 5, "f"), Error);
  r.reset({0, 1, 2, 4}, 5, "f");
  EXPECT_EQ(r.size(), 4);
  EXPECT_FALSE(r.contains(3));
  EXPECT_EQ(*r.find(4), 3);
}

}  // namespace
}  // namespace simkit::test
