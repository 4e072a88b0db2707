#pragma once
// Rank 0 of `mpirun -n P simkit serve`: the HTTP server every client talks to, which spreads each
// request over the P ranks (docs/API.md, "Sharded over MPI ranks"). Each rank keeps the points
// it owns (shard_wire.hpp: a hash of the id modulo P) in an Api of its own; rank 0's is the one
// that listens, with this router installed (Api::set_router) and its collections' batches handed
// to it (CollectionSettings::run_batch).
//
//   upsert            each point to its owner; answered once every owner has committed it
//   search, query     each batch the batcher forms goes to every rank, which searches its points;
//                     the per-rank hits are merged on rank 0 (shard_merge.hpp)
//   scroll            a page from every rank, merged in id order
//   get a point       its owner answers
//   retrieve, count   every rank answers; points gathered, counts summed
//   collection info   every rank answers; counts summed
//   writes by filter or id, payload edits, collection and payload-index and alias changes:
//                     every rank runs the request; answered with the first error, else merged
//   snapshots         501: a snapshot of one rank's share is not a snapshot of the collection
//
// Ranks 1..P-1 are reached through a ShardLink (apps/cli/mpi_serve.cpp: MPI, called from one
// thread); rank 0 runs its own share here.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "api.hpp"
#include "query_body.hpp"
#include "server.hpp"
#include "shard_wire.hpp"

namespace simkit::server {

/// How rank 0 reaches the other ranks.
class ShardLink {
 public:
  virtual ~ShardLink() = default;
  /// Sends `message` to rank `to` (1..P-1); `answer` gets its reply once, on the link's thread,
  /// and must not wait. Callable from any thread.
  virtual void send(int to, std::shared_ptr<const std::string> message, std::function<void(std::string&&)> answer) = 0;
};

class ShardRouter final : public ServeShards {
 public:
  ShardRouter(ShardLink& link, int ranks);
  ~ShardRouter() override;

  void configure(ApiSettings& settings) override;
  void attach(Api& api, std::function<void()> drain) override;
  void wait_ranks_loaded() override;
  void detach() override;
  /// Begins the drain (another rank was signalled); remembered until attach() when it comes first.
  void drain();

 private:
  using Answers = std::vector<std::string>;  // one encoded answer per rank (by rank)
  using Put = std::function<void(std::string&&)>;
  /// Runs rank 0's share of a request and hands its answer to the Put, now or later.
  using Own = std::function<void(Put)>;
  using Messages = std::vector<std::shared_ptr<const std::string>>;  // by rank; rank 0's unused
  using Combine = std::function<void(Call&, std::vector<ForwardReply>&)>;

  bool route(Call& call);
  /// Sends each rank in `to` but 0 its message and runs `own` for rank 0 (when in `to`); `done`
  /// gets the answers once all are in, on the thread that brought the last (it must not wait).
  void ask(const std::vector<int>& to, const Messages& messages, Own own, std::function<void(Answers&)> done);
  /// The same message to each; waits here for the answers.
  Answers ask_and_wait(const std::vector<int>& to, std::string message, Own own);
  Messages same(std::string message) const;
  /// Runs the request on every rank of `to` (rank 0 first, alone, with `rank0_first`), then
  /// answers the first error in rank order or `combine`s the replies.
  void forward(Call& call, const std::vector<int>& to, Combine combine, bool rank0_first = false);
  void relay(Call& call, const ForwardReply& reply, int rank);
  void upsert(Call& call);
  void finish_upsert(Call& call, Answers& answers, bool wait);
  void scroll(Call& call);
  std::optional<int64_t> resolve_on(int rank, Collection& collection, const PointId& id);
  void query(Call& call, bool batch);
  std::vector<float> fetch_vector(Collection& collection, const PointId& id, const std::string& where);
  SearchQuery resolve_query(Collection& collection, QueryRequest&& q);
  void run_batch(Collection& collection, std::vector<Queued<SearchJob>>& batch);
  std::vector<int> all_ranks() const;

  ShardLink& link_;
  int ranks_;
  Api* api_ = nullptr;
  std::mutex drain_mutex_;
  std::function<void()> drain_;
  bool drain_asked_ = false;       // before attach()
  boost::asio::thread_pool pool_;  // combines answers; never waits on itself
};

}  // namespace simkit::server
