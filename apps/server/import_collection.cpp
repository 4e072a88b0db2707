#include "import_collection.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <simkit/error.hpp>
#include <simkit/index.hpp>

#include "api.hpp"
#include "api_error.hpp"
#include "data_dir_lock.hpp"
#include "import_inputs.hpp"
#include "point_store.hpp"

namespace simkit::server {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw Error(ErrorCode::io, "cannot open " + simkit::quoted(dir.string(), 200) + " to sync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw Error(ErrorCode::io, "cannot sync " + simkit::quoted(dir.string(), 200));
}

// Reports at most one line every few seconds.
class Progress {
 public:
  explicit Progress(const std::function<void(const std::string&)>& report) : report_(report) {}
  void operator()(const std::string& line) {
    if (!report_ || seconds_since(last_) < 2.0) return;
    last_ = Clock::now();
    report_(line);
  }

 private:
  const std::function<void(const std::string&)>& report_;
  Clock::time_point last_ = Clock::now();
};

std::string with_commas(int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Removes the temporary folder unless the import got as far as renaming it into place.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(fs::path path) : path_(std::move(path)) { fs::create_directories(path_); }
  ~TemporaryFolder() {
    std::error_code ignored;
    if (!kept_) fs::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const fs::path& path() const noexcept { return path_; }
  void keep() noexcept { kept_ = true; }

 private:
  fs::path path_;
  bool kept_ = false;
};

void check_options(const ImportOptions& o, CollectionConfig& config) {
  try {
    check_collection_name(o.collection);
  } catch (const ApiError& e) {
    throw Error(ErrorCode::invalid_argument, std::string("--collection: ") + e.what());
  }
  config.distance = o.distance;
  config.index = o.index;
  metric_for_distance(o.distance);  // refuses an unknown name, listing the known ones
}

}  // namespace

ImportReport import_collection(const ImportOptions& o) {
  CollectionConfig config;
  check_options(o, config);
  const DataDirLock lock(o.data_dir, "simkit import", "stop it or import elsewhere");
  const fs::path collections = o.data_dir / "collections";
  const fs::path target = collections / o.collection;
  if (fs::exists(target))
    throw Error(ErrorCode::invalid_argument, "collection " + simkit::quoted(o.collection) + " already exists in " +
                                                 simkit::quoted(o.data_dir.string(), 200) +
                                                 ": import under another name, or delete it first");
  ImportReport report;
  Progress progress(o.progress);

  auto t = Clock::now();
  const Matrix<float> vectors = read_import_vectors(o.vectors);
  const IdsFile ids_file = o.ids.empty() ? IdsFile{} : read_import_ids(o.ids);
  const std::string payload_text = o.payloads.empty() ? std::string() : read_import_payloads(o.payloads);
  report.read = seconds_since(t);

  t = Clock::now();
  const int64_t n = vectors.rows();
  config.dim = vectors.cols();
  check_import_vectors(vectors.view(), o.vectors);
  make_index(config.index, config.dim, metric_for_distance(config.distance));  // refuses a bad description
  std::vector<PointId> ids = check_import_ids(ids_file, o.ids, n);
  std::vector<std::string> payloads = o.payloads.empty() ? std::vector<std::string>(static_cast<size_t>(n))
                                                         : check_import_payloads(payload_text, o.payloads, n, o.limits);
  report.check = seconds_since(t);

  // Written under a name the server's start sweeps away (".tmp-"), renamed once complete.
  t = Clock::now();
  TemporaryFolder folder(collections / (".tmp-import-" + o.collection + "-" + std::to_string(::getpid())));
  std::unique_ptr<PointStore> store = PointStore::create(folder.path() / "points.sqlite", config);
  store->begin_bulk();
  const int64_t step = std::max<int64_t>(1, o.points_per_transaction);
  std::vector<StoredPoint> chunk;
  for (int64_t first = 0; first < n; first += step) {
    const int64_t last = std::min(n, first + step);
    chunk.resize(static_cast<size_t>(last - first));
    for (int64_t i = first; i < last; ++i) {
      StoredPoint& p = chunk[static_cast<size_t>(i - first)];
      PointId& id = ids[static_cast<size_t>(i)];
      p.id = id.number;  // -1 for a UUID: the store assigns its internal id
      p.uuid = std::move(id.uuid);
      const float* row = vectors.view().row(i);
      p.vector.resize(static_cast<size_t>(config.dim));
      for (int64_t j = 0; j < config.dim; ++j)
        p.vector[static_cast<size_t>(j)] = row[j] == 0.f ? 0.f : row[j];  // -0: 0, as an upsert stores it
      p.payload = std::move(payloads[static_cast<size_t>(i)]);
    }
    store->upsert(chunk);  // one transaction
    progress("simkit import: " + with_commas(last) + " / " + with_commas(n) + " points written (" +
             std::to_string(100 * last / n) + "%)");
  }
  report.write = seconds_since(t);

  t = Clock::now();
  store->finish_bulk();
  store.reset();
  sync_dir(folder.path());
  if (fs::exists(target))
    throw Error(ErrorCode::invalid_argument, "collection " + simkit::quoted(o.collection) + " appeared meanwhile");
  fs::rename(folder.path(), target);
  folder.keep();
  sync_dir(collections);
  report.sync = seconds_since(t);
  report.points = n;
  report.dim = config.dim;
  return report;
}

}  // namespace simkit::server
