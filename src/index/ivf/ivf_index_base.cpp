#include "index/ivf/ivf_index_base.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>

#include "core/expects.hpp"

namespace simkit::detail {

int64_t IvfIndexBase::size() const {
  std::shared_lock lock(mutex_);
  return core().size();
}

bool IvfIndexBase::is_trained() const {
  std::shared_lock lock(mutex_);
  return core().trained();
}

int64_t IvfIndexBase::next_id() const {
  std::shared_lock lock(mutex_);
  return ids_.next();
}

void IvfIndexBase::check_trainable(int64_t n) const {
  SIMKIT_EXPECTS(n >= cells_.nlist, invalid_argument, "train: ", n, " vectors cannot form nlist = ", cells_.nlist,
                 " cells; give at least nlist vectors (FAISS suggests 39 per cell) or lower nlist");
}

void IvfIndexBase::train(const Context& ctx, MatrixView<const float> X) {
  check_rows(ctx, X, dim(), "train");
  check_trainable(X.rows);
  Matrix<float> sample;
  const int64_t cap = cells_.train_sample > 0 ? cells_.train_sample : default_sample();
  train_drawn(ctx, training_sample(X, cap, cells_.nlist, cells_.seed, sample));
}

void IvfIndexBase::train_drawn(const Context& ctx, MatrixView<const float> T) {
  std::unique_lock lock(mutex_);
  IvfCore& c = core();
  SIMKIT_EXPECTS(c.size() == 0, invalid_argument, "train: the index already holds ", c.size(),
                 " vectors, which new cells would misplace; build a new index");
  Matrix<float> made;
  const MatrixView<const float> Tp = training_rows(ctx, T, made);

  KmeansParams kp;
  kp.k = cells_.nlist;
  kp.metric = kmeans_metric(c.coarse);
  kp.max_iterations = cells_.iterations;
  kp.seed = cells_.seed;
  if (ctx.progress)
    kp.on_iteration = [&](int it, double) { ctx.progress(0.5 * std::min(1.0, it / double(cells_.iterations + 1))); };
  Context quiet = ctx;
  quiet.progress = nullptr;
  const KmeansResult r = kmeans(quiet, Tp, kp);
  c.centroids.assign(r.centroids.data(), r.centroids.data() + r.centroids.size());
  c.arena.reset(cells_.nlist, columns());
  trained(ctx, made);
  c.drop_device_copy();
  if (ctx.progress) ctx.progress(1.0);
}

TrainingRows IvfIndexBase::training_draw(int64_t n) const {
  const int64_t cap = cells_.train_sample > 0 ? cells_.train_sample : default_sample();
  TrainingRows t;
  t.rows = training_indices(n, cap, cells_.nlist, cells_.seed);
  t.all = t.rows.empty();
  return t;
}

void IvfIndexBase::train_on_rows(const Context& ctx, MatrixView<const float> T, int64_t n) {
  check_rows(ctx, T, dim(), "train");
  check_trainable(n);
  train_drawn(ctx, T);
}

std::vector<float> IvfIndexBase::trained_state() const {
  std::shared_lock lock(mutex_);
  std::vector<float> state = core().centroids;
  append_trained_state(state);
  return state;
}

void IvfIndexBase::stored_rows(ArrayView<const int64_t> ids, MatrixView<float> out) const {
  std::shared_lock lock(mutex_);
  const IvfCore& c = core();
  SIMKIT_EXPECTS(out.rows == ids.size && out.cols == c.dim && out.where == Memory::host, invalid_argument,
                 "stored_rows: the output must be host ", ids.size, " x ", c.dim);
  for (int64_t i = 0; i < ids.size; ++i) {
    const std::optional<int64_t> l = ids_.find(ids[i]);
    SIMKIT_EXPECTS(l.has_value(), invalid_argument, "stored_rows: id ", ids[i], " is not stored");
    const float* row = stored_row(c.arena.find(*l, ids[i]));
    SIMKIT_EXPECTS(row != nullptr, unsupported, "stored_rows: this ", type(),
                   " index keeps no vectors (ivf_pq built with refine=0)");
    std::copy_n(row, c.dim, out.row(i));
  }
}

void IvfIndexBase::add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> given) {
  check_rows(ctx, X, dim(), "add");
  std::unique_lock lock(mutex_);
  IvfCore& c = core();
  SIMKIT_EXPECTS(c.trained(), invalid_argument, "add: train the ", type(), " index first");
  const std::vector<int64_t> ids = ids_.assign(given, X.rows);
  const std::vector<int64_t> cells = stage(ctx, X);
  // Each list's new rows, by id: merged into the list's block, which stays in id order.
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(c.nlist));
  for (int64_t i = 0; i < X.rows; ++i) members[static_cast<size_t>(cells[size_t(i)])].push_back(i);
  for (int64_t l = 0; l < c.nlist; ++l) {
    std::vector<int64_t>& fresh = members[static_cast<size_t>(l)];
    if (fresh.empty()) continue;
    std::sort(fresh.begin(), fresh.end(), [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
    c.arena.merge(l, fresh, ids, columns(), [&](int64_t at, int64_t i) { put(at, i, l); });
    for (int64_t i : fresh) ids_.set(ids[size_t(i)], l);
    if (ctx.progress) ctx.progress(static_cast<double>(l + 1) / c.nlist);
  }
  unstage();
  c.arena.compact_if_sparse(columns());
  c.drop_device_copy();
}

int64_t IvfIndexBase::remove(ArrayView<const int64_t> gone) {
  check_remove_ids(gone);
  std::unique_lock lock(mutex_);
  IvfCore& c = core();
  // The lists the ids live in (the map keeps each id's list), each cleared in one pass.
  std::vector<std::pair<int64_t, int64_t>> by_list;  // (list, id)
  for (int64_t i = 0; i < gone.size; ++i)
    if (const std::optional<int64_t> l = ids_.erase(gone[i])) by_list.emplace_back(*l, gone[i]);
  if (by_list.empty()) return 0;
  std::sort(by_list.begin(), by_list.end());
  int64_t removed = 0;
  std::vector<int64_t> ids;
  for (size_t i = 0; i < by_list.size();) {
    const int64_t l = by_list[i].first;
    ids.clear();
    for (; i < by_list.size() && by_list[i].first == l; ++i) ids.push_back(by_list[i].second);
    removed += c.arena.erase(l, ids, columns());
  }
  c.arena.compact_if_sparse(columns());
  c.drop_device_copy();
  return removed;
}

AllowedRows IvfIndexBase::allowed_rows(ArrayView<const int64_t> allowed) const {
  AllowedRows out;
  for (int64_t a = 0; a < allowed.size; ++a) {
    const std::optional<int64_t> l = ids_.find(allowed[a]);
    if (!l) continue;
    out.ids.push_back(allowed[a]);
    out.rows.push_back(core().arena.find(*l, allowed[a]));
  }
  return out;
}

bool IvfIndexBase::scan_filters(Device device, ArrayView<const int64_t> allowed, int64_t lists, int64_t k) const {
  const int64_t n = core().size(), probed = lists >= cells_.nlist ? n : n / cells_.nlist * lists;
  return filter_in_scan(device, allowed.size, n, probed, k);
}

void IvfIndexBase::write_lists(IndexFileWriter& w, const std::string& type, const std::string& description,
                               const std::vector<int64_t>& compact_ids, std::vector<int64_t>& offsets) const {
  const IvfCore& c = core();
  offsets.clear();
  if (c.trained()) {  // the compact offsets: list lengths, summed
    offsets.push_back(0);
    for (int64_t l = 0; l < c.nlist; ++l) offsets.push_back(offsets.back() + c.arena.length(l));
  }
  write_common(w, type, metric_, c.dim, c.size(), ids_.next());
  w.add_text("description", description);
  w.add_u64("trained", c.trained() ? 1 : 0);
  w.add("centroids", c.centroids.data(), c.centroids.size() * sizeof(float));
  w.add("offsets", offsets.data(), offsets.size() * sizeof(int64_t));
  w.add("ids", compact_ids.data(), compact_ids.size() * sizeof(int64_t));
}

void IvfIndexBase::read_lists(const IndexFile& f, const CommonHeader& h) {
  IvfCore& c = core();
  const bool trained = f.u64("trained") != 0;
  if (!trained && h.size != 0) refuse_file(f, "an untrained " + type() + " index cannot hold vectors");
  const int64_t nlist = cells_.nlist, n = h.size;
  std::vector<int64_t> offsets;
  if (trained) {
    c.centroids = read_array<float>(f, "centroids", nlist * h.dim);
    check_finite_section(f, "centroids", c.centroids);
    offsets = read_array<int64_t>(f, "offsets", nlist + 1);
    if (offsets.front() != 0 || offsets.back() != n || !std::is_sorted(offsets.begin(), offsets.end()))
      refuse_file(f, "the list offsets do not partition the " + std::to_string(n) + " vectors");
  }
  std::vector<int64_t> ids = read_array<int64_t>(f, "ids", n);
  std::vector<int64_t> list_of(ids.size());  // the id map's slot: each row's list
  for (int64_t l = 0; l < nlist && trained; ++l) {
    const auto first = ids.begin() + offsets[size_t(l)], last = ids.begin() + offsets[size_t(l + 1)];
    if (!std::is_sorted(first, last)) refuse_file(f, "list " + std::to_string(l) + " is not in id order");
    std::fill(list_of.begin() + offsets[size_t(l)], list_of.begin() + offsets[size_t(l + 1)], l);
  }
  ids_.reset(ids, list_of, h.next_id, f.path());
  if (trained) c.arena.assign(offsets, std::move(ids));
}

}  // namespace simkit::detail
