#include "metrics.hpp"

#include <prometheus/text_serializer.h>

namespace simkit::server {

namespace {

prometheus::Histogram::BucketBoundaries latency_buckets() {
  return {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 10};
}

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  requests_ = &prometheus::BuildCounter()
                   .Name("simkit_http_requests_total")
                   .Help("HTTP requests answered, by route template and status code")
                   .Register(*registry_);
  durations_ = &prometheus::BuildHistogram()
                    .Name("simkit_http_request_duration_seconds")
                    .Help("Time from a request's headers to its response, by route template")
                    .Register(*registry_);
  depth_ = &prometheus::BuildGauge()
                .Name("simkit_batch_queue_depth")
                .Help("Searches waiting in a collection's batcher")
                .Register(*registry_);
  points_ = &prometheus::BuildGauge()
                 .Name("simkit_collection_points")
                 .Help("Points stored in a collection")
                 .Register(*registry_);
  rejected_ = &prometheus::BuildCounter()
                   .Name("simkit_rejected_total")
                   .Help("Requests refused by load shedding: queue_full (503), deadline (504), connections (503)")
                   .Register(*registry_);
  short_ = &prometheus::BuildCounter()
                .Name("simkit_search_short_total")
                .Help("Searches that got fewer candidates than they asked for (padded, never topped up by a full scan)")
                .Register(*registry_);
  queue_wait_ = &prometheus::BuildHistogram()
                     .Name("simkit_batch_queue_wait_seconds")
                     .Help("Time a search waited in the batcher before its batch started")
                     .Register(*registry_)
                     .Add({}, latency_buckets());
  batch_size_ = &prometheus::BuildHistogram()
                     .Name("simkit_batch_size")
                     .Help("Searches run together as one library call")
                     .Register(*registry_)
                     .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  for (const char* reason : {"queue_full", "deadline", "connections"}) rejected_->Add({{"reason", reason}});
  auto& stages = prometheus::BuildCounter()
                     .Name("simkit_upsert_seconds_total")
                     .Help(
                         "Seconds accepted upserts spent in each stage: receive (reading the body), parse, queue "
                         "(write pool, writer lock), store (SQLite transaction and fsync), apply (index, payloads)")
                     .Register(*registry_);
  for (size_t i = 0; i < 5; ++i) upsert_stage_[i] = &stages.Add({{"stage", kUpsertStages[i]}});
  upserts_ = &prometheus::BuildCounter()
                  .Name("simkit_upsert_requests_total")
                  .Help("Upserts accepted (stored and applied)")
                  .Register(*registry_)
                  .Add({});
  auto& bodies =
      prometheus::BuildCounter()
          .Name("simkit_upsert_bodies_total")
          .Help(
              "Accepted upsert bodies by the reader that read them: fast, or reference (those the fast one left to it)")
          .Register(*registry_);
  fast_bodies_ = &bodies.Add({{"reader", "fast"}});
  reference_bodies_ = &bodies.Add({{"reader", "reference"}});
}

void Metrics::upsert_stages(const double (&seconds)[5]) {
  for (size_t i = 0; i < 5; ++i) upsert_stage_[i]->Increment(seconds[i]);
  upserts_->Increment();
}

void Metrics::request(const std::string& route, unsigned code, double seconds) {
  prometheus::Counter* counter;
  prometheus::Histogram* histogram;
  {
    std::lock_guard g(mutex_);
    auto& c = request_counters_[{route, code}];
    if (!c) c = &requests_->Add({{"route", route}, {"code", std::to_string(code)}});
    auto& h = route_histograms_[route];
    if (!h) h = &durations_->Add({{"route", route}}, latency_buckets());
    counter = c;
    histogram = h;
  }
  counter->Increment();
  histogram->Observe(seconds);
}

void Metrics::rejected(const std::string& reason) { rejected_->Add({{"reason", reason}}).Increment(); }

prometheus::Gauge& Metrics::queue_depth(const std::string& collection) {
  return depth_->Add({{"collection", collection}});
}

prometheus::Gauge& Metrics::points(const std::string& collection) { return points_->Add({{"collection", collection}}); }

prometheus::Counter& Metrics::short_searches(const std::string& collection) {
  return short_->Add({{"collection", collection}});
}

void Metrics::forget(const std::string& collection) {
  depth_->Remove(&depth_->Add({{"collection", collection}}));
  points_->Remove(&points_->Add({{"collection", collection}}));
  short_->Remove(&short_->Add({{"collection", collection}}));
}

std::string Metrics::scrape() const { return prometheus::TextSerializer().Serialize(registry_->Collect()); }

}  // namespace simkit::server
