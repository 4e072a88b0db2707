#include "index/search_params.hpp"

#include <string>

#include <simkit/error.hpp>

#include "core/expects.hpp"

namespace simkit {

namespace detail {

const char* search_params_name(const SearchParams& sp) {
  if (typeid(sp) == typeid(IvfSearchParams)) return "IvfSearchParams";
  if (typeid(sp) == typeid(IvfPqSearchParams)) return "IvfPqSearchParams";
  if (typeid(sp) == typeid(LshSearchParams)) return "LshSearchParams";
  if (typeid(sp) == typeid(HnswSearchParams)) return "HnswSearchParams";
  if (typeid(sp) == typeid(SearchParams)) return "SearchParams";
  return "a type derived from SearchParams";
}

void refuse_search_params(const char* type, const SearchParams& given, const char* expected) {
  raise(ErrorCode::invalid_argument, type, " search: given ", search_params_name(given), ", but ", type, " reads ",
        expected, " (or a plain SearchParams for its defaults)");
}

}  // namespace detail

std::unique_ptr<SearchParams> make_search_params(const Index& index, const SearchKnobs& knobs) {
  const std::string type = index.type();
  auto refuse = [&](const char* knob, const char* reader) {
    detail::raise(ErrorCode::invalid_argument, knob, " applies to ", reader, "; this index is ", type);
  };
  if (knobs.refine != 0 && type != "ivf_pq") refuse("refine", "ivf_pq");
  if (knobs.probes != 0 && type != "lsh") refuse("probes", "lsh");
  if (knobs.nprobe != 0 && type != "ivf_flat" && type != "ivf_pq") refuse("nprobe", "ivf_flat and ivf_pq");
  if (knobs.ef != 0 && type != "hnsw") refuse("ef", "hnsw");
  if (type == "ivf_flat") {
    auto p = std::make_unique<IvfSearchParams>();
    p->nprobe = knobs.nprobe;
    return p;
  }
  if (type == "ivf_pq") {
    auto p = std::make_unique<IvfPqSearchParams>();
    p->nprobe = knobs.nprobe, p->refine = knobs.refine;
    return p;
  }
  if (type == "lsh") {
    auto p = std::make_unique<LshSearchParams>();
    p->probes = knobs.probes;
    return p;
  }
  if (type == "hnsw") {
    auto p = std::make_unique<HnswSearchParams>();
    p->ef = knobs.ef;
    return p;
  }
  return std::make_unique<SearchParams>();
}

}  // namespace simkit
