#pragma once
// The server's Prometheus metrics (prometheus-cpp's core library; GET /metrics serves the text
// format). Labels are bounded: routes are templates ("/collections/{name}/points/search"),
// never concrete paths, so a scan of random URLs cannot grow the registry.
//
//   simkit_http_requests_total{route, code}         counter
//   simkit_http_request_duration_seconds{route}     histogram, 50 us .. 10 s
//   simkit_batch_queue_wait_seconds                 histogram: enqueue to the start of its batch
//   simkit_batch_size                               histogram: searches run as one call
//   simkit_batch_queue_depth{collection}            gauge
//   simkit_collection_points{collection}            gauge
//   simkit_rejected_total{reason}                   counter: queue_full (503), deadline (504),
//                                                   connections (503 at accept)
//   simkit_search_short_total{collection}           counter: searches whose index found fewer
//                                                   candidates than limit + offset (lsh buckets,
//                                                   ivf lists), answered with fewer hits
//   simkit_upsert_seconds_total{stage}              counter: where accepted upserts spent their
//                                                   time: receive (the body off the socket),
//                                                   parse, queue (write pool and writer lock),
//                                                   store (SQLite, fsync), apply (index, payloads)
//   simkit_upsert_requests_total                    counter: accepted upserts (the divisor)
//   simkit_upsert_bodies_total{reader}              counter: accepted upsert bodies by the reader
//                                                   that read them: fast, or reference (those the
//                                                   fast one left to it: upsert_fast.hpp)

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace simkit::server {

class Metrics {
 public:
  Metrics();

  void request(const std::string& route, unsigned code, double seconds);
  void queue_wait(double seconds) { queue_wait_->Observe(seconds); }
  void batch_size(int64_t n) { batch_size_->Observe(static_cast<double>(n)); }
  void rejected(const std::string& reason);
  prometheus::Gauge& queue_depth(const std::string& collection);
  prometheus::Gauge& points(const std::string& collection);
  prometheus::Counter& short_searches(const std::string& collection);
  /// One accepted upsert's seconds in each stage, in the order of kUpsertStages.
  static constexpr const char* kUpsertStages[] = {"receive", "parse", "queue", "store", "apply"};
  void upsert_stages(const double (&seconds)[5]);
  void upsert_body_read(bool fast) { (fast ? fast_bodies_ : reference_bodies_)->Increment(); }
  /// Drops a deleted collection's gauges.
  void forget(const std::string& collection);

  /// The Prometheus text exposition of everything above.
  std::string scrape() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* durations_;
  prometheus::Family<prometheus::Gauge>* depth_;
  prometheus::Family<prometheus::Gauge>* points_;
  prometheus::Family<prometheus::Counter>* rejected_;
  prometheus::Family<prometheus::Counter>* short_;
  prometheus::Histogram* queue_wait_;
  prometheus::Histogram* batch_size_;
  prometheus::Counter* upsert_stage_[5];
  prometheus::Counter* upserts_;
  prometheus::Counter* fast_bodies_;
  prometheus::Counter* reference_bodies_;
  // Family::Add hashes its labels on every call: keep what the hot path touches.
  std::mutex mutex_;
  std::map<std::pair<std::string, unsigned>, prometheus::Counter*> request_counters_;
  std::map<std::string, prometheus::Histogram*> route_histograms_;
};

}  // namespace simkit::server
