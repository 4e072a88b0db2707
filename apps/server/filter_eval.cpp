#include "filter_eval.hpp"

#include <algorithm>

namespace simkit::server {

namespace {

// A point tested on its text costs about what 50 ids of an index's list do (a hash lookup, a
// walk of the payload's text, against a merge step): a condition on an indexed field is tested
// point by point instead when the points left are that much fewer than its list.
constexpr size_t kWalkCost = 50;

class Evaluator {
 public:
  Evaluator(const PayloadIndexes& ix, const PayloadMap& payloads, const IdResolver& resolve)
      : ix_(ix), payloads_(payloads), resolve_(resolve) {}

  Ids run(const Filter& f) {
    Domain d;
    narrow(f, d);
    return d.all ? ix_.live() : std::move(d.ids);
  }

 private:
  // The points still in play: every live point (not copied) or a list.
  struct Domain {
    bool all = true;
    Ids ids;
  };
  const Ids& ids(const Domain& d) const { return d.all ? ix_.live() : d.ids; }
  static Domain list(Ids ids) { return {false, std::move(ids)}; }

  void narrow(const Filter& f, Domain& d);
  Ids holds(const Condition& c, const Domain& d);
  Ids walk(const Ids& candidates, const Condition& c) const;
  const FieldIndex* index_for(const Condition& c) const;
  size_t cost(const Condition& c) const;

  const PayloadIndexes& ix_;
  const PayloadMap& payloads_;
  const IdResolver& resolve_;
};

const FieldIndex* Evaluator::index_for(const Condition& c) const {
  using K = Condition::Kind;
  if (c.kind == K::has_id || c.kind == K::filter || c.kind == K::nested) return nullptr;
  return ix_.find(c.key);
}

// An order for must: lookups by their estimated size, then nested filters, then walks.
size_t Evaluator::cost(const Condition& c) const {
  const size_t n = ix_.live().size();
  if (c.kind == Condition::Kind::has_id) return c.ids.size();
  if (c.kind == Condition::Kind::filter) return n + 1;
  const FieldIndex* index = index_for(c);
  if (!index) return 2 * n + 2;
  if (c.kind == Condition::Kind::is_empty) return n - index->nonempty().size();
  if (c.kind == Condition::Kind::is_null) return index->nulls().size();
  return index->answers(c) ? index->estimate(c) : 2 * n + 2;
}

void Evaluator::narrow(const Filter& f, Domain& d) {
  std::vector<const Condition*> must;
  for (const Condition& c : f.must) must.push_back(&c);
  std::stable_sort(must.begin(), must.end(),
                   [this](const Condition* a, const Condition* b) { return cost(*a) < cost(*b); });
  for (const Condition* c : must) {
    d = list(holds(*c, d));
    if (d.ids.empty()) return;
  }
  if (!f.should.empty()) {
    Ids any;
    for (const Condition& c : f.should) {
      // A walk tests only the points no earlier condition already let in.
      const FieldIndex* index = index_for(c);
      const bool walks =
          c.kind != Condition::Kind::has_id && c.kind != Condition::Kind::filter &&
          (!index || !(index->answers(c) || c.kind == Condition::Kind::is_empty || c.kind == Condition::Kind::is_null));
      any = unite(any, holds(c, walks && !any.empty() ? list(subtract(ids(d), any)) : d));
    }
    d = list(std::move(any));
  }
  if (f.min_count > 0) {
    Ids all;
    for (const Condition& c : f.min_should) {
      const Ids s = holds(c, d);
      all.insert(all.end(), s.begin(), s.end());
    }
    std::sort(all.begin(), all.end());
    Ids enough;
    for (size_t i = 0; i < all.size();) {
      size_t j = i;
      while (j < all.size() && all[j] == all[i]) ++j;
      if (static_cast<int64_t>(j - i) >= f.min_count) enough.push_back(all[i]);
      i = j;
    }
    d = list(std::move(enough));
  }
  for (const Condition& c : f.must_not) {
    if (!d.all && d.ids.empty()) return;
    d = list(subtract(ids(d), holds(c, d)));
  }
}

// The ids of `d` for which `c` holds.
Ids Evaluator::holds(const Condition& c, const Domain& d) {
  using K = Condition::Kind;
  if (c.kind == K::has_id) {
    Ids given;
    for (const nlohmann::json& written : c.ids)
      if (const std::optional<int64_t> id = resolve_ ? resolve_(written) : std::nullopt) given.push_back(*id);
    normalize(given);
    return intersect(given, ids(d));  // ids of no live point drop out here
  }
  if (c.kind == K::filter) {
    Domain sub = d;
    narrow(*c.filter, sub);
    return sub.all ? ix_.live() : std::move(sub.ids);
  }
  const FieldIndex* index = index_for(c);
  if (index && c.kind == K::is_empty) return subtract(ids(d), index->nonempty());
  if (index && c.kind == K::is_null) return intersect(index->nulls(), ids(d));
  if (!index || !index->answers(c) || (!d.all && d.ids.size() * kWalkCost < index->estimate(c))) return walk(ids(d), c);
  Ids found = *index->kept_matches(c, d.all ? nullptr : &d.ids);
  // Points holding values the index does not keep are tested on their text.
  if (!index->others().empty()) found = unite(found, walk(intersect(index->others(), ids(d)), c));
  return found;
}

Ids Evaluator::walk(const Ids& candidates, const Condition& c) const {
  Ids out;
  for (int64_t id : candidates) {
    const auto it = payloads_.find(id);
    if (condition_holds(c, it == payloads_.end() ? std::string_view() : std::string_view(it->second)))
      out.push_back(id);
  }
  return out;
}

}  // namespace

Ids evaluate(const Filter& f, const PayloadIndexes& indexes, const PayloadMap& payloads, const IdResolver& resolve) {
  return Evaluator(indexes, payloads, resolve).run(f);
}

}  // namespace simkit::server
