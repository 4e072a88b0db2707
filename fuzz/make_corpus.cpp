// Writes the seed corpora of fuzz/corpus/ (fuzz/README.md): small valid inputs of every kind
// each harness reads, and a few near-valid ones (cut short, one byte changed, a field renamed).
//
//   fuzz_make_corpus OUT_DIR     writes OUT_DIR/<harness>/<name> (existing files are replaced)
//
// The index files are made by the library itself (make_index, train, add, remove, save), so
// they follow the format of the build that runs this; the arrays by write_matrix / write_ids
// and, for the .npy types the writers do not produce (float16, float64, small integers, format
// 2.0), by hand. The server bodies are the shapes of docs/API.md and tests/server/.

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/index.hpp>
#include <simkit/io.hpp>

namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<unsigned char>;

fs::path g_out;

void emit(const std::string& harness, const std::string& name, const Bytes& bytes) {
  const fs::path dir = g_out / harness;
  fs::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + (dir / name).string());
}

Bytes with_prefix(unsigned char first, const Bytes& rest) {
  Bytes b{first};
  b.insert(b.end(), rest.begin(), rest.end());
  return b;
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

Bytes read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

simkit::Matrix<float> points(int64_t n, int64_t dim, float phase) {
  simkit::Matrix<float> m(n, dim);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < dim; ++j)
      m(i, j) = std::sin(phase + 1.3f * static_cast<float>(i) + 0.7f * static_cast<float>(j * j)) +
                0.1f * static_cast<float>(i % 3);
  return m;
}

// ------------------------------------------------------------------ fuzz_index_file

void index_corpus(const fs::path& scratch) {
  simkit::Context ctx;
  ctx.device = simkit::Device::cpu;
  ctx.threads = 1;
  struct Case {
    const char* name;
    const char* description;
    int64_t dim, n;
    simkit::Metric metric;
    bool train, remove_some;
  };
  const Case cases[] = {
      {"flat_l2", "flat", 4, 6, simkit::Metric::l2, false, false},
      {"flat_cosine_removed", "flat", 3, 8, simkit::Metric::cosine, false, true},
      {"flat_empty", "flat", 5, 0, simkit::Metric::dot, false, false},
      {"ivf_flat_l2", "ivf_flat,nlist=3,nprobe=2,iterations=5", 4, 12, simkit::Metric::l2, true, false},
      {"ivf_flat_untrained", "ivf_flat,nlist=4", 4, 0, simkit::Metric::l1, false, false},
      {"ivf_flat_pearson_removed", "ivf_flat,nlist=2,iterations=3", 3, 10, simkit::Metric::pearson, true, true},
      {"ivf_pq_l2", "ivf_pq,nlist=2,m=2,iterations=3", 4, 16, simkit::Metric::l2, true, false},
      {"ivf_pq_refine_dot", "ivf_pq,nlist=2,m=1,refine=2,iterations=3", 2, 12, simkit::Metric::dot, true, false},
      {"lsh_cosine", "lsh,tables=2,bits=2", 4, 10, simkit::Metric::cosine, true, false},
      {"lsh_l2_probes", "lsh,tables=3,bits=3,probes=2,seed=7", 3, 9, simkit::Metric::l2, true, true},
      {"lsh_l1_width", "lsh,tables=1,bits=2,width=0.5", 2, 6, simkit::Metric::l1, true, false},
      {"tree_l2", "tree", 3, 10, simkit::Metric::l2, false, false},
      {"tree_sqeuclidean_removed", "tree", 8, 9, simkit::Metric::sqeuclidean, false, true},
  };
  for (const Case& c : cases) {
    auto index = simkit::make_index(c.description, c.dim, c.metric);
    const simkit::Matrix<float> x = points(c.n, c.dim, static_cast<float>(c.dim));
    if (c.train) index->train(ctx, x.view());
    if (c.n > 0) index->add(ctx, x.view());
    if (c.remove_some) {
      const std::vector<int64_t> gone = {1, 4};
      index->remove(simkit::ArrayView<const int64_t>(gone));
    }
    const fs::path file = scratch / (std::string(c.name) + ".simkit");
    index->save(file.string());
    const Bytes bytes = read_file(file);
    // mode 0: the file as it is; mode 2: re-sealed (the same bytes: the harness rewrites the
    // trailer, the magic and the version to what they already are).
    emit("fuzz_index_file", std::string(c.name), with_prefix(0, bytes));
    emit("fuzz_index_file", std::string(c.name) + "_sealed", with_prefix(2, bytes));
    // Near-valid: a byte of the last section changed (refused by the checksum in mode 0,
    // reaching the index's own checks in mode 1), and the file cut short.
    Bytes changed = bytes;
    changed[changed.size() - 20] ^= 0x5a;
    emit("fuzz_index_file", std::string(c.name) + "_changed", with_prefix(0, changed));
    emit("fuzz_index_file", std::string(c.name) + "_changed_sealed", with_prefix(1, changed));
    emit("fuzz_index_file", std::string(c.name) + "_cut", with_prefix(0, Bytes(bytes.begin(), bytes.end() - 9)));
  }
  emit("fuzz_index_file", "not_an_index", text("\x01hello, not an index file at all, but long enough to seal it"));
}

// ------------------------------------------------------------------ fuzz_array_file

// The first byte picks the extension (fuzz_array_file.cpp): 0 .npy, 1 .fvecs, 2 .ivecs, 3 .bvecs.
enum Ext : unsigned char { npy = 0, fvecs = 1, ivecs = 2, bvecs = 3, npy_upper = 4, unknown = 6 };

Bytes npy_file(const std::string& descr, const std::string& shape, const Bytes& payload, int major = 1,
               bool fortran = false) {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  const uint32_t len = static_cast<uint32_t>(dict.size());
  b.push_back(static_cast<unsigned char>(len & 0xff));
  b.push_back(static_cast<unsigned char>(len >> 8));
  if (major != 1) {
    b.push_back(static_cast<unsigned char>(len >> 16));
    b.push_back(static_cast<unsigned char>(len >> 24));
  }
  b.insert(b.end(), dict.begin(), dict.end());
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

template <class T>
Bytes raw(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

uint16_t to_half(float f) {
  // Exact for the small values used here (normal halves: sign, 5-bit exponent, 10-bit mantissa).
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  const uint32_t mant = (x >> 13) & 0x3ffu;
  if ((x & 0x7fffffffu) == 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | mant);
}

void array_corpus(const fs::path& scratch) {
  const simkit::Matrix<float> m = points(3, 4, 0.5f);
  const std::string a = "fuzz_array_file";
  auto written = [&](const std::string& file, auto write) {
    write((scratch / file).string());
    return read_file(scratch / file);
  };
  const Bytes f32 = written("m.npy", [&](const std::string& p) { simkit::write_matrix(p, m.view()); });
  emit(a, "f32_3x4.npy", with_prefix(npy, f32));
  emit(a, "f32_3x4_upper.NPY", with_prefix(npy_upper, f32));
  emit(a, "f32_cut.npy", with_prefix(npy, Bytes(f32.begin(), f32.end() - 5)));
  emit(a, "f32_as_fvecs", with_prefix(fvecs, f32));
  emit(a, "f32_unknown_ext", with_prefix(unknown, f32));

  simkit::Matrix<float> small(2, 3);
  for (int64_t i = 0; i < small.size(); ++i) small.data()[i] = static_cast<float>(i * 7 % 5);
  emit(a, "m.fvecs",
       with_prefix(fvecs, written("m.fvecs", [&](const std::string& p) { simkit::write_matrix(p, m.view()); })));
  emit(a, "small.bvecs",
       with_prefix(bvecs, written("m.bvecs", [&](const std::string& p) { simkit::write_matrix(p, small.view()); })));
  simkit::Matrix<int64_t> ids(3, 2);
  for (int64_t i = 0; i < ids.size(); ++i) ids.data()[i] = i * 11 - 2;
  emit(a, "ids.ivecs",
       with_prefix(ivecs, written("i.ivecs", [&](const std::string& p) { simkit::write_ids(p, ids.view()); })));
  emit(a, "ids_i8.npy",
       with_prefix(npy, written("i.npy", [&](const std::string& p) { simkit::write_ids(p, ids.view()); })));

  // A .vecs file whose second row claims another width (near-valid).
  std::vector<int32_t> ragged = {2, 1, 2, 3, 4, 5, 6};
  emit(a, "ragged.ivecs", with_prefix(ivecs, raw(ragged)));

  // The .npy types only readers see.
  std::vector<double> f64 = {0.5, -1.25, 3.0, 1e-3, 2.0, 1e30};
  emit(a, "f64_2x3.npy", with_prefix(npy, npy_file("<f8", "(2, 3)", raw(f64))));
  emit(a, "f64_huge.npy", with_prefix(npy, npy_file("<f8", "(1, 1)", raw(std::vector<double>{1e300}))));
  std::vector<uint16_t> f16;
  for (float v : {0.5f, -1.0f, 2.0f, 0.0f, 1.5f, -0.25f}) f16.push_back(to_half(v));
  emit(a, "f16_3x2.npy", with_prefix(npy, npy_file("<f2", "(3, 2)", raw(f16))));
  emit(a, "f16_1d.npy", with_prefix(npy, npy_file("<f2", "(6,)", raw(f16))));
  emit(a, "u1_2x2.npy", with_prefix(npy, npy_file("|u1", "(2, 2)", Bytes{1, 2, 3, 255})));
  emit(a, "i4_1d_v2.npy", with_prefix(npy, npy_file("<i4", "(3,)", raw(std::vector<int32_t>{7, -1, 1 << 20}), 2)));
  emit(a, "u8_2x1.npy", with_prefix(npy, npy_file("<u8", "(2, 1)", raw(std::vector<uint64_t>{3, ~0ull}))));
  emit(a, "i2_0x3.npy", with_prefix(npy, npy_file("<i2", "(0, 3)", Bytes{})));
  emit(a, "big_endian.npy", with_prefix(npy, npy_file(">f4", "(1, 2)", Bytes(8, 0x3f))));
  emit(a, "fortran.npy", with_prefix(npy, npy_file("<f4", "(2, 1)", raw(std::vector<float>{1, 2}), 1, true)));
}

// ------------------------------------------------------------------ the server's bodies

void server_corpus() {
  // fuzz_search_body: the first byte picks the dimension (1 + byte % 8): 3 -> 4.
  const std::string s = "fuzz_search_body";
  const char d4 = 3, d2 = 1;
  auto body = [](char dim, const std::string& json) { return text(std::string(1, dim) + json); };
  emit(s, "simple", body(d4, R"({"vector": [0.2, 0.1, 0.9, 0.7], "limit": 2, "with_payload": true})"));
  emit(s, "simple_all",
       body(d4, R"({"vector":[1,-2e-3,3.5E2,0],"limit":10,"offset":5,"with_payload":false,)"
                R"("with_vector":false})"));
  emit(s, "vector_only", body(d2, R"({"vector": [0.5, -0.5]})"));
  emit(s, "filter",
       body(d4, R"({"vector": [0.2, 0.1, 0.9, 0.7], "limit": 3, "filter": {"must": )"
                R"([{"key": "city", "match": {"value": "London"}}]}})"));
  emit(s, "wrong_dim", body(d4, R"({"vector": [0.2, 0.1, 0.9], "limit": 2})"));
  emit(s, "float_limit", body(d2, R"({"vector": [1, 2], "limit": 2.0})"));
  emit(s, "overflow", body(d2, R"({"vector": [1e39, 2], "limit": 1})"));
  emit(s, "escaped_key", body(d2, R"({"vec\u0074or": [1, 2], "offset": 0})"));
  emit(s, "repeated", body(d2, R"({"vector": [1, 2], "limit": 1, "limit": 2})"));
  emit(s, "unknown", body(d2, R"({"vector": [1, 2], "limt": 1})"));
  emit(s, "with_vector_true", body(d2, R"({"vector": [1, 2], "with_vector": true})"));
  emit(s, "malformed", body(d2, R"({"vector": [1, 2,], "limit": 1)"));

  // fuzz_upsert_body: the first byte picks the dimension alike.
  const std::string u = "fuzz_upsert_body";
  emit(u, "points", body(d4, R"({"points": [
  {"id": 1, "vector": [0.05, 0.61, 0.76, 0.74], "payload": {"city": "Berlin", "year": 2024, "open": true}},
  {"id": 2, "vector": [0.19, 0.81, 0.75, 0.11], "payload": {"city": ["London", "Paris"]}},
  {"id": 3, "vector": [0.36, 0.55, 0.47, 0.94]}]})"));
  emit(u, "nested_payload",
       body(d2, R"({"points": [{"id": 7, "vector": [1, 0], "payload": )"
                R"({"a": {"b": [1, {"c": null}], "d": "\u00e9\n"}, "e": -3.5e-7}}]})"));
  emit(u, "null_payload", body(d2, R"({"points": [{"id": 0, "vector": [0, 0], "payload": null}]})"));
  emit(u, "duplicate_id", body(d2, R"({"points": [{"id": 5, "vector": [1, 1]}, {"id": 5, "vector": [2, 2]}]})"));
  emit(u, "string_id", body(d2, R"({"points": [{"id": "5c2e", "vector": [1, 1]}]})"));
  emit(u, "negative_id", body(d2, R"({"points": [{"id": -1, "vector": [1, 1]}]})"));
  emit(u, "nan", body(d2, R"({"points": [{"id": 1, "vector": [NaN, 1]}]})"));
  emit(u, "empty", body(d2, R"({"points": []})"));
  emit(
      u, "deep",
      body(d2,
           R"({"points": [{"id": 1, "vector": [1, 1], "payload": {"a": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}}]})"));

  // fuzz_filter: the filter's JSON, a NUL byte, then the payload's JSON text.
  const std::string f = "fuzz_filter";
  auto pair = [](const std::string& filter, const std::string& payload) {
    return text(filter + std::string(1, '\0') + payload);
  };
  emit(f, "string",
       pair(R"({"must": [{"key": "city", "match": {"value": "London"}}]})",
            R"({"city": ["London", "Paris"], "year": 2024})"));
  emit(f, "int_bool",
       pair(R"({"must": [{"key": "year", "match": {"value": 2024}}, )"
            R"({"key": "open", "match": {"value": true}}]})",
            R"({"city":"Berlin","year":2024,"open":true})"));
  emit(f, "negative_int", pair(R"({"must": [{"key": "t", "match": {"value": -7}}]})", R"({"t": [-7, 7.0, "-7"]})"));
  emit(f, "big_uint",
       pair(R"({"must": [{"key": "n", "match": {"value": 18446744073709551615}}]})", R"({"n": 18446744073709551615})"));
  emit(f, "escaped",
       pair(R"({"must": [{"key": "k\"ey", "match": {"value": "a\u00e9\n"}}]})",
            R"({"k\"ey": "a\u00e9\n", "other": {"k\"ey": 1}})"));
  emit(f, "float_vs_int", pair(R"({"must": [{"key": "x", "match": {"value": 1}}]})", R"({"x": 1.0})"));
  emit(f, "repeated_key", pair(R"({"must": [{"key": "x", "match": {"value": 1}}]})", R"({"x": 2, "x": 1})"));
  emit(f, "empty_must", pair(R"({"must": []})", R"({})"));
  emit(f, "should", pair(R"({"should": [{"key": "x", "match": {"value": 1}}]})", R"({"x": 1})"));
  emit(f, "range", pair(R"({"must": [{"key": "x", "range": {"gt": 1}}]})", R"({"x": 2})"));
  emit(f, "nested_array", pair(R"({"must": [{"key": "x", "match": {"value": "a"}}]})", R"({"x": [["a"], "b"]})"));
  emit(f, "clauses",
       pair(R"({"must": [{"key": "a[].b", "match": {"any": ["x", "y"]}}, {"is_empty": {"key": "c"}}], )"
            R"("should": {"key": "n", "range": {"gte": 1, "lt": 5.5}}, "must_not": [{"has_id": [7]}], )"
            R"("min_should": {"conditions": [{"key": "t", "match": {"text": "ab"}}, {"is_null": {"key": "z"}}], )"
            R"("min_count": 1}})",
            R"({"a":[{"b":"x"},{"b":1}],"n":[1,2.5,"q"],"t":"xaby","z":null})"));
  emit(
      f, "nested",
      pair(
          R"({"should": [{"nested": {"key": "items", "filter": {"must": [{"key": "q", "match": {"except": [1, 2]}}]}}}, )"
          R"({"key": "k.\"d.e\"", "match": {"value": true}}]})",
          R"({"items":[{"q":1},{"q":3.5},{"q":"s"}],"k":{"d.e":[true,null]}})"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_corpus OUT_DIR\n";
    return 2;
  }
  g_out = argv[1];
  const fs::path scratch = fs::temp_directory_path() / ("simkit-corpus-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  try {
    index_corpus(scratch);
    array_corpus(scratch);
    server_corpus();
  } catch (const std::exception& e) {
    std::cerr << "fuzz_make_corpus: " << e.what() << "\n";
    fs::remove_all(scratch);
    return 1;
  }
  fs::remove_all(scratch);
  return 0;
}
