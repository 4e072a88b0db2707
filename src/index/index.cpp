// The index factory, loading, and what every index shares through the base class.

#include <simkit/index.hpp>

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/expects.hpp"
#include "core/quoted_path.hpp"
#include "index/flat/flat_index.hpp"
#include "index/hnsw/hnsw_index.hpp"
#include "index/index_file.hpp"
#include "index/index_support.hpp"
#include "index/ivf/ivf_flat_index.hpp"
#include "index/ivf/ivf_pq_index.hpp"
#include "index/lsh/lsh_index.hpp"
#include "index/tree/tree_index.hpp"

namespace simkit {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

int64_t parse_count(std::string_view description, std::string_view key, std::string_view value, int64_t lo,
                    int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  SIMKIT_EXPECTS(ec == std::errc{} && end == value.data() + value.size() && v >= lo && v <= hi, invalid_argument,
                 "index description ", simkit::quoted(description), ": ", key, " must be an integer in [", lo, ", ", hi,
                 "], got ", simkit::quoted(value));
  return v;
}

/// Calls on(key, value) for each ",key=value" after the kind; `known` lists the kind's keys for
/// the error naming an unknown one (on returns false for those).
template <class On>
void for_each_pair(std::string_view description, const std::vector<std::string_view>& parts, const char* known, On on) {
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    SIMKIT_EXPECTS(eq != std::string_view::npos, invalid_argument, "index description ", simkit::quoted(description),
                   ": ", simkit::quoted(parts[i]), " is not key=value");
    const std::string_view key = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
    if (!on(key, value))
      detail::raise(ErrorCode::invalid_argument, "index description ", simkit::quoted(description), ": unknown ",
                    simkit::quoted(parts.front()), " parameter ", simkit::quoted(key), " (known: ", known, ")");
  }
}

double parse_width(std::string_view description, std::string_view value) {
  double v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  SIMKIT_EXPECTS(ec == std::errc{} && end == value.data() + value.size() && std::isfinite(v) && v >= 0,
                 invalid_argument, "index description ", simkit::quoted(description),
                 ": width must be a finite number >= 0 (0: from the data), got ", simkit::quoted(value));
  return v;
}

/// The keys ivf_flat and ivf_pq share (their cells, probes and training); false for others.
template <class Params>
bool parse_cells_key(std::string_view description, std::string_view key, std::string_view value, Params& p) {
  if (key == "nlist")
    p.nlist = parse_count(description, key, value, 1, int64_t(1) << 24);
  else if (key == "nprobe")
    p.nprobe = value == "seed" ? kProbeFourFifths : parse_count(description, key, value, 1, int64_t(1) << 24);
  else if (key == "train_sample")
    p.train_sample = parse_count(description, key, value, 0, INT64_MAX);
  else if (key == "iterations")
    p.iterations = static_cast<int>(parse_count(description, key, value, 0, 1000));
  else if (key == "seed")
    p.seed = static_cast<uint64_t>(parse_count(description, key, value, 0, INT64_MAX));
  else
    return false;
  return true;
}

IvfFlatParams parse_ivf_flat(std::string_view description, const std::vector<std::string_view>& parts) {
  IvfFlatParams p;
  for_each_pair(description, parts, "nlist, nprobe, train_sample, iterations, seed",
                [&](auto key, auto value) { return parse_cells_key(description, key, value, p); });
  return p;
}

IvfPqParams parse_ivf_pq(std::string_view description, const std::vector<std::string_view>& parts) {
  IvfPqParams p;
  for_each_pair(description, parts, "nlist, m, refine, refine_on, nprobe, train_sample, iterations, seed",
                [&](auto key, auto value) {
                  if (key == "m") {
                    p.m = parse_count(description, key, value, 1, int64_t(1) << 20);
                  } else if (key == "refine") {
                    p.refine = parse_count(description, key, value, 0, int64_t(1) << 20);
                  } else if (key == "refine_on") {
                    SIMKIT_EXPECTS(value == "device" || value == "host", invalid_argument, "index description ",
                                   simkit::quoted(description), ": refine_on must be device or host, got ",
                                   simkit::quoted(value));
                    p.refine_on_device = value == "device";
                  } else {
                    return parse_cells_key(description, key, value, p);
                  }
                  return true;
                });
  return p;
}

LshParams parse_lsh(std::string_view description, const std::vector<std::string_view>& parts) {
  LshParams p;
  for_each_pair(description, parts, "tables, bits, probes, width, seed", [&](auto key, auto value) {
    if (key == "tables")
      p.tables = parse_count(description, key, value, 1, 4096);
    else if (key == "bits")
      p.bits = parse_count(description, key, value, 1, 32);
    else if (key == "probes")
      p.probes = parse_count(description, key, value, 1, int64_t(1) << 32);
    else if (key == "width")
      p.width = parse_width(description, value);
    else if (key == "seed")
      p.seed = static_cast<uint64_t>(parse_count(description, key, value, 0, INT64_MAX));
    else
      return false;
    return true;
  });
  return p;
}

HnswParams parse_hnsw(std::string_view description, const std::vector<std::string_view>& parts) {
  HnswParams p;
  for_each_pair(description, parts, "m, ef_construction, ef, seed, storage, refine", [&](auto key, auto value) {
    if (key == "m") {
      p.m = parse_count(description, key, value, 2, 2048);  // the layers' odds are 1 / m
    } else if (key == "ef_construction") {
      p.ef_construction = parse_count(description, key, value, 1, int64_t(1) << 20);
    } else if (key == "ef") {
      p.ef = parse_count(description, key, value, 1, int64_t(1) << 30);
    } else if (key == "seed") {
      p.seed = static_cast<uint64_t>(parse_count(description, key, value, 0, INT64_MAX));
    } else if (key == "storage") {
      SIMKIT_EXPECTS(value == "float32" || value == "sq8", invalid_argument, "index description ",
                     simkit::quoted(description), ": storage must be float32 or sq8, got ", simkit::quoted(value));
      p.storage = std::string(value);
    } else if (key == "refine") {
      p.refine = parse_count(description, key, value, 1, int64_t(1) << 20);
    } else {
      return false;
    }
    return true;
  });
  return p;
}

/// The parameters of a loaded index, from its description section; a description that does
/// not parse refuses the file.
template <class Parse>
auto parse_saved(const detail::IndexFile& f, Parse parse) {
  const std::string description = f.text("description");
  try {
    return parse(description, split(description, ','));
  } catch (const Error& e) {
    detail::refuse_file(f, std::string("its description does not parse: ") + e.what());
  }
}

}  // namespace

void Index::reserve(int64_t rows) {
  SIMKIT_EXPECTS(rows >= 0 && rows <= (int64_t(1) << 40), invalid_argument, "reserve: rows must be in [0, 2^40], got ",
                 rows);
}

IndexSearchResult Index::search(const Context& ctx, MatrixView<const float> Q, int64_t k,
                                const SearchParams& params) const {
  SIMKIT_EXPECTS(k >= 1, invalid_argument, "search: k must be at least 1, got ", k);
  SIMKIT_EXPECTS(Q.rows >= 0 && Q.rows <= (int64_t(1) << 40) / k, invalid_argument, "search: ", Q.rows,
                 " queries x k = ", k, " is too large a result");
  IndexSearchResult r{Matrix<float>(Q.rows, k), Matrix<int64_t>(Q.rows, k)};
  search(ctx, Q, k, params, r.values.view(), r.ids.view());
  return r;
}

std::unique_ptr<Index> make_index(std::string_view description, int64_t dim, Metric metric) {
  SIMKIT_EXPECTS(dim >= 1 && dim <= (1 << 20), invalid_argument, "index dimension must be in [1, 2^20], got ", dim);
  const std::vector<std::string_view> parts = split(description, ',');
  const std::string_view kind = parts.front();
  if (kind == "flat") {
    SIMKIT_EXPECTS(parts.size() == 1, invalid_argument, "index description ", simkit::quoted(description),
                   ": flat takes no parameters");
    return detail::make_flat_index(dim, metric);
  }
  if (kind == "tree") {
    SIMKIT_EXPECTS(parts.size() == 1, invalid_argument, "index description ", simkit::quoted(description),
                   ": tree takes no parameters");
    return detail::make_tree_index(dim, metric);
  }
  if (kind == "ivf_flat") return detail::make_ivf_flat_index(dim, metric, parse_ivf_flat(description, parts));
  if (kind == "ivf_pq") return detail::make_ivf_pq_index(dim, metric, parse_ivf_pq(description, parts));
  if (kind == "lsh") return detail::make_lsh_index(dim, metric, parse_lsh(description, parts));
  if (kind == "hnsw") return detail::make_hnsw_index(dim, metric, parse_hnsw(description, parts));
  detail::raise(ErrorCode::invalid_argument, "unknown index type ", simkit::quoted(kind), " in ",
                simkit::quoted(description),
                " (known: flat, ivf_flat[,nlist=N,nprobe=N|seed,...], ivf_pq[,nlist=N,m=N,refine=N,...], "
                "lsh[,tables=N,bits=N,probes=N,...], tree, "
                "hnsw[,m=N,ef_construction=N,ef=N,seed=N,storage=float32|sq8,refine=N])");
}

std::unique_ptr<Index> load_index(const std::string& path) {
  const detail::IndexFile f = detail::IndexFile::read(path);
  const std::string type = f.text("type");
  if (type == "flat") return detail::load_flat_index(f);
  if (type == "ivf_flat") return detail::load_ivf_flat_index(f, parse_saved(f, parse_ivf_flat));
  if (type == "ivf_pq") return detail::load_ivf_pq_index(f, parse_saved(f, parse_ivf_pq));
  if (type == "lsh") return detail::load_lsh_index(f, parse_saved(f, parse_lsh));
  if (type == "tree") return detail::load_tree_index(f);
  if (type == "hnsw") return detail::load_hnsw_index(f, parse_saved(f, parse_hnsw));
  throw Error(ErrorCode::io, "not a usable simkit index file: " + detail::quoted_path(path) + ": unknown index type " +
                                 simkit::quoted(type));
}

}  // namespace simkit
