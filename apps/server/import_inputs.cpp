#include "import_inputs.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string_view>
#include <unordered_map>

#include <simdjson.h>
#include <nlohmann/json.hpp>
#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "api_error.hpp"
#include "payload_writer.hpp"
#include "request_json.hpp"

namespace simkit::server {

namespace {

std::string name_of(const std::string& path) { return simkit::quoted(path, 200); }

[[noreturn]] void refuse(const std::string& message) { throw Error(ErrorCode::invalid_argument, message); }

// Calls visit(line number from 1, text without its '\n' or "\r\n") for each line; a last line
// without '\n' counts, an empty text has no lines.
template <typename Visit>
void for_each_line(std::string_view text, Visit&& visit) {
  int64_t number = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    visit(++number, line);
    at = end + 1;
  }
}

int64_t count_lines(std::string_view text) {
  int64_t n = 0;
  for_each_line(text, [&](int64_t, std::string_view) { ++n; });
  return n;
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::io, "cannot open " + name_of(path));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(ErrorCode::io, "cannot read " + name_of(path));
  return text;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One payload line as the compact text payload_text would store, read by simdjson when it can
// (the upsert's fast reader does the same: payload_writer.hpp) and by nlohmann for the numbers
// simdjson refuses (integers beyond 64 bits, which nlohmann reads as doubles).
class PayloadReader {
 public:
  explicit PayloadReader(const PayloadLimits& limits) : limits_(limits) {}

  std::string read(std::string_view line, const std::string& where) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      refuse(where + " is empty: each line holds one payload, a JSON object (null for none)");
    if (line.find('\0') != std::string_view::npos) refuse(where + " holds a NUL byte");
    // Measured before parsing, as a request body is: a deep line is refused unparsed.
    const int64_t depth = measure_json(line).depth;
    if (depth > limits_.max_depth + 8) too_deep(where, depth);
    std::string text;
    if (!compact(line, text)) {
      const nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) refuse(where + " is not valid JSON (" + parse_error_ + ")");
      if (j.is_null()) return "";
      if (!j.is_object()) refuse(where + " is not a JSON object (it is " + std::string(j.type_name()) + ")");
      text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    }
    if (text == "null") return "";
    const JsonShape shape = measure_json(text);
    if (shape.depth > limits_.max_depth) too_deep(where, shape.depth);
    if (shape.values > limits_.max_values)
      refuse(where + " holds " + std::to_string(shape.values) + " values; the limit is " +
             std::to_string(limits_.max_values) + " per point (the server's default --max-payload-values)");
    if (static_cast<int64_t>(text.size()) > limits_.max_bytes)
      refuse(where + " is " + std::to_string(text.size()) + " bytes as compact JSON; the limit is " +
             std::to_string(limits_.max_bytes) + " per point (the server's default --max-payload-kb)");
    return text;
  }

 private:
  // False when simdjson refuses the line (parse_error_ says why); an object or null otherwise.
  bool compact(std::string_view line, std::string& out) {
    if (padded_.size() < line.size() + simdjson::SIMDJSON_PADDING) padded_.resize(line.size() * 2 + 64);
    std::memcpy(padded_.data(), line.data(), line.size());
    simdjson::dom::element e;
    if (const auto error = parser_.parse(padded_.data(), line.size(), false).get(e)) {
      parse_error_ = simdjson::error_message(error);
      return false;
    }
    if (e.is_null()) {
      out = "null";
      return true;
    }
    if (!e.is_object()) return false;  // nlohmann names its type
    append_compact_json(e, out);
    return true;
  }

  [[noreturn]] void too_deep(const std::string& where, int64_t depth) const {
    refuse(where + " nests arrays and objects " + std::to_string(depth) + " deep; the limit is " +
           std::to_string(limits_.max_depth) + " (the server's default --max-payload-depth)");
  }

  const PayloadLimits& limits_;
  simdjson::dom::parser parser_;
  std::vector<char> padded_;
  std::string parse_error_;
};

}  // namespace

Matrix<float> read_import_vectors(const std::string& path) { return read_matrix(path); }

void check_import_vectors(MatrixView<const float> vectors, const std::string& path) {
  if (vectors.rows < 1) refuse(name_of(path) + " holds no vectors");
  if (vectors.cols < 1 || vectors.cols > 65536)
    refuse(name_of(path) + " has vectors of " + std::to_string(vectors.cols) +
           " values; a collection's are 1 .. 65536");
  std::vector<float> row(static_cast<size_t>(vectors.cols));
  for (int64_t r = 0; r < vectors.rows; ++r) {
    const float* v = vectors.row(r);
    for (int64_t c = 0; c < vectors.cols; ++c)
      if (!std::isfinite(v[c]))
        refuse(name_of(path) + " row " + std::to_string(r) + " column " + std::to_string(c) + " is " +
               (std::isnan(v[c]) ? "NaN" : "infinite") + ": vectors must be finite");
    row.assign(v, v + vectors.cols);
    if (!scores_stay_finite(row))
      refuse(name_of(path) + " row " + std::to_string(r) +
             " is too long: its squared norm exceeds 2^125 (about 4.3e37), so its scores against other vectors could "
             "overflow float32; scale the vectors down");
  }
}

IdsFile read_import_ids(const std::string& path) {
  IdsFile f;
  if (ends_with(path, ".txt")) {
    f.is_text = true;
    f.text = read_whole(path);
    return f;
  }
  if (!ends_with(path, ".npy")) refuse("--ids " + name_of(path) + ": expected an .npy of integers or a .txt");
  const Matrix<int64_t> m = read_ids(path);
  if (m.rows() != 1 && m.cols() != 1)
    refuse(name_of(path) + " is " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
           "; ids are one column (or one row)");
  f.numbers.assign(m.view().data, m.view().data + m.size());
  return f;
}

std::vector<PointId> check_import_ids(const IdsFile& file, const std::string& path, int64_t n) {
  std::vector<PointId> ids;
  ids.reserve(static_cast<size_t>(n));
  if (path.empty()) {
    for (int64_t i = 0; i < n; ++i) ids.push_back({i, {}});
    return ids;
  }
  const int64_t count = file.is_text ? count_lines(file.text) : static_cast<int64_t>(file.numbers.size());
  if (count != n)
    refuse(name_of(path) + " has " + std::to_string(count) + " ids; the vectors file has " + std::to_string(n) +
           " rows (one id per vector, in the same order)");
  // Where each id was first seen (a row or a line), for the message about a second one.
  std::unordered_map<int64_t, int64_t> numbers;
  std::unordered_map<std::string, int64_t> uuids;
  const std::string unit = file.is_text ? " line " : " row ";
  auto add = [&](PointId&& id, int64_t at) {
    const int64_t first =
        id.is_uuid() ? uuids.try_emplace(id.uuid, at).first->second : numbers.try_emplace(id.number, at).first->second;
    if (first != at)
      refuse(name_of(path) + unit + std::to_string(at) + ": id " + id.json().dump() + " appears twice (first at" +
             unit + std::to_string(first) + ")");
    ids.push_back(std::move(id));
  };
  if (file.is_text) {
    for_each_line(file.text, [&](int64_t line, std::string_view text) {
      try {
        add(parse_point_id_text(text), line);
      } catch (const ApiError& e) {
        refuse(name_of(path) + " line " + std::to_string(line) + ": " + e.what());
      }
    });
    return ids;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = file.numbers[static_cast<size_t>(i)];
    if (v < 0 || v >= kFirstUuidId)
      refuse(name_of(path) + " row " + std::to_string(i) + ": id " + std::to_string(v) +
             " is out of range (integer ids are 0 .. 2^62 - 1; give UUIDs in a .txt)");
    add({v, {}}, i);
  }
  return ids;
}

std::string read_import_payloads(const std::string& path) { return read_whole(path); }

std::vector<std::string> check_import_payloads(const std::string& text, const std::string& path, int64_t n,
                                               const PayloadLimits& limits) {
  const int64_t count = count_lines(text);
  if (count != n)
    refuse(name_of(path) + " has " + std::to_string(count) + " lines; the vectors file has " + std::to_string(n) +
           " rows (one payload per vector, in the same order; null for none)");
  std::vector<std::string> payloads;
  payloads.reserve(static_cast<size_t>(n));
  PayloadReader reader(limits);
  for_each_line(text, [&](int64_t line, std::string_view json) {
    payloads.push_back(reader.read(json, name_of(path) + " line " + std::to_string(line)));
  });
  return payloads;
}

}  // namespace simkit::server
