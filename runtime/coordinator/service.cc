// The coordinator's lifecycle, its waiting and the RPCs without tensors. The streaming RPCs
// (initial values, state reduction) are in coordinator_service_streams.cc.
#include "runtime/coordinator/service.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/rpc/grpc_helpers.h"

namespace autodist::coordinator {
namespace {

// How often the deadlines are checked: a tenth of a second is far below any sensible deadline
// and costs nothing.
constexpr std::chrono::milliseconds kDeadlineCheckInterval{100};
// Cancellation by the caller is not signalled through the condition variable, so a waiting call
// looks at least this often.
constexpr std::chrono::milliseconds kCancelPollInterval{50};

std::optional<JobState::Clock::time_point> RendezvousDeadline(JobState::Clock::time_point started,
                                                              std::chrono::milliseconds limit) {
  if (limit.count() <= 0) return std::nullopt;
  return started + limit;
}

}  // namespace

CoordinatorService::CoordinatorService(strategy::ResourceSpec spec,
                                       autodist::proto::Strategy strategy, std::string job_id,
                                       CoordinatorOptions options)
    : options_(options),
      strategy_(std::move(strategy)),
      started_(Clock::now()),
      rendezvous_deadline_(RendezvousDeadline(started_, options.rendezvous_deadline)),
      job_(spec, std::move(job_id), started_),
      barriers_(job_.WorkerNodes()),
      rounds_(job_.WorkerNodes()),
      store_(options.store_limits) {
  AD_CHECK(options_.heartbeat_deadline.count() > 0 && options_.max_wait.count() > 0 &&
               options_.max_tensor_bytes > 0,
           kInvalidArgument,
           "coordinator options: heartbeat deadline ({} ms), max wait ({} ms) and max tensor "
           "bytes ({}) must be positive",
           options_.heartbeat_deadline.count(), options_.max_wait.count(),
           options_.max_tensor_bytes);
  deadline_thread_ = std::thread([this] { WatchDeadlines(); });
}

CoordinatorService::~CoordinatorService() { Shutdown(); }

void CoordinatorService::Shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_) return;
    shutting_down_ = true;
  }
  changed_.notify_all();
  deadline_thread_.join();
}

void CoordinatorService::WatchDeadlines() {
  std::unique_lock lock(mutex_);
  while (!shutting_down_) {
    changed_.wait_for(lock, kDeadlineCheckInterval, [this] { return shutting_down_; });
    if (shutting_down_) break;
    if (job_.CheckDeadlines(Clock::now(), options_.heartbeat_deadline, rendezvous_deadline_)) {
      changed_.notify_all();
    }
  }
}

StatusSnapshot CoordinatorService::Snapshot() const {
  std::lock_guard lock(mutex_);
  return StatusFromProto(StatusLocked());
}

autodist::proto::StatusReply CoordinatorService::StatusLocked() const {
  autodist::proto::StatusReply reply = job_.Status(Clock::now());
  // Step 0 is a fresh start: checkpoints are written after a step, never before the first.
  if (initial_values_ != nullptr && initial_values_->header.step() > 0) {
    reply.set_has_resumed_from_step(true);
    reply.set_resumed_from_step(initial_values_->header.step());
  }
  return reply;
}

bool CoordinatorService::WaitSettled(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [this] { return shutting_down_ || job_.settled(); });
  return job_.settled();
}

void CoordinatorService::CheckOpen() const {
  AD_CHECK(!shutting_down_, kUnavailable, "the coordinator of job '{}' is shutting down",
           job_.job_id());
}

std::chrono::milliseconds CoordinatorService::EffectiveWait(int64_t wait_ms) const {
  if (wait_ms <= 0) return options_.max_wait;
  return std::min(std::chrono::milliseconds(wait_ms), options_.max_wait);
}

CoordinatorService::WaitEnd CoordinatorService::WaitFor(std::unique_lock<std::mutex>& lock,
                                                        grpc::ServerContext* context,
                                                        int64_t wait_ms,
                                                        const std::function<bool()>& ready) {
  const Clock::time_point deadline = Clock::now() + EffectiveWait(wait_ms);
  while (true) {
    if (ready()) return WaitEnd::kReady;
    if (job_.failed()) return WaitEnd::kFailed;
    if (shutting_down_) return WaitEnd::kShutdown;
    if (context->IsCancelled()) return WaitEnd::kCancelled;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return WaitEnd::kTimedOut;
    changed_.wait_until(lock, std::min(deadline, now + kCancelPollInterval));
  }
}

grpc::Status CoordinatorService::Aborted(const std::string& node) {
  job_.MarkNotified(node);
  changed_.notify_all();  // the job may have settled
  return {grpc::StatusCode::ABORTED,
          fmt::format("job '{}' failed: {}", job_.job_id(), job_.reason())};
}

grpc::Status CoordinatorService::WaitError(WaitEnd end, const std::string& node,
                                           const std::string& what, int64_t wait_ms,
                                           const std::string& waiting_for) {
  switch (end) {
    case WaitEnd::kFailed:
      return Aborted(node);
    case WaitEnd::kShutdown:
      return {grpc::StatusCode::UNAVAILABLE,
              fmt::format("{}: the coordinator of job '{}' is shutting down", what, job_.job_id())};
    case WaitEnd::kCancelled:
      return {grpc::StatusCode::CANCELLED, fmt::format("{}: the caller went away", what)};
    case WaitEnd::kTimedOut:
    case WaitEnd::kReady:
      break;
  }
  return {grpc::StatusCode::DEADLINE_EXCEEDED,
          fmt::format("{}: timed out after {:.1f} s waiting for {}", what,
                      std::chrono::duration<double>(EffectiveWait(wait_ms)).count(), waiting_for)};
}

grpc::Status CoordinatorService::Register(grpc::ServerContext* context,
                                          const autodist::proto::RegisterRequest* request,
                                          autodist::proto::RegisterReply* reply) {
  return rpc::Serve([&]() -> grpc::Status {
    const std::string& node = request->node();
    std::unique_lock lock(mutex_);
    CheckOpen();
    if (job_.failed()) {
      job_.Member(node, "Register");
      return Aborted(node);
    }
    if (auto conflict = job_.Register(*request, Clock::now())) {
      return {grpc::StatusCode::FAILED_PRECONDITION, *conflict};
    }
    changed_.notify_all();
    const WaitEnd end =
        WaitFor(lock, context, request->wait_ms(), [this] { return job_.rendezvous_complete(); });
    if (end != WaitEnd::kReady) {
      const std::string missing = ListNodes(job_.MissingNodes());
      // Free the slot, so that a restarted process of this node can register.
      job_.LeaveRendezvous(node);
      return WaitError(end, node, fmt::format("Register: node '{}'", node), request->wait_ms(),
                       missing + " to register");
    }
    *reply = job_.RegisterReplyFor(node);
    *reply->mutable_strategy() = strategy_;
    return grpc::Status::OK;
  });
}

grpc::Status CoordinatorService::Barrier(grpc::ServerContext* context,
                                         const autodist::proto::BarrierRequest* request,
                                         autodist::proto::BarrierReply* /*reply*/) {
  return rpc::Serve([&]() -> grpc::Status {
    const std::string& node = request->node();
    std::unique_lock lock(mutex_);
    CheckOpen();
    const int rank = job_.RegisteredWorker(node, "Barrier").rank;
    if (job_.failed()) return Aborted(node);
    barriers_.Arrive(request->name(), request->generation(), rank);
    changed_.notify_all();
    const WaitEnd end = WaitFor(lock, context, request->wait_ms(), [&] {
      return barriers_.Released(request->name(), request->generation());
    });
    if (end == WaitEnd::kReady) return grpc::Status::OK;
    return WaitError(
        end, node,
        fmt::format("Barrier '{}' (generation {}): worker '{}'", request->name(),
                    request->generation(), node),
        request->wait_ms(),
        ListNodes(barriers_.Missing(request->name(), request->generation())) + " to arrive");
  });
}

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext* /*context*/,
                                           const autodist::proto::HeartbeatRequest* request,
                                           autodist::proto::HeartbeatReply* reply) {
  return rpc::Serve([&]() -> grpc::Status {
    std::lock_guard lock(mutex_);
    CheckOpen();
    if (job_.failed()) {
      job_.Member(request->node(), "Heartbeat");
      job_.MarkNotified(request->node());
      changed_.notify_all();  // the job may have settled
      reply->set_abort(true);
      reply->set_reason(job_.reason());
    } else {
      job_.Heartbeat(request->node(), request->step(), Clock::now());
    }
    if (job_.workers_finished()) {
      reply->set_workers_finished(true);
      job_.MarkToldWorkersFinished(request->node());
      changed_.notify_all();  // the job may have settled
    }
    return grpc::Status::OK;
  });
}

grpc::Status CoordinatorService::ReportProgress(grpc::ServerContext* /*context*/,
                                                const autodist::proto::ProgressReport* request,
                                                autodist::proto::ProgressReply* /*reply*/) {
  return rpc::Serve([&]() -> grpc::Status {
    std::lock_guard lock(mutex_);
    CheckOpen();
    if (job_.failed()) {
      job_.Member(request->node(), "ReportProgress");
      return Aborted(request->node());
    }
    job_.Progress(*request, Clock::now());
    return grpc::Status::OK;
  });
}

grpc::Status CoordinatorService::Status(grpc::ServerContext* /*context*/,
                                        const autodist::proto::StatusRequest* /*request*/,
                                        autodist::proto::StatusReply* reply) {
  return rpc::Serve([&]() -> grpc::Status {
    std::lock_guard lock(mutex_);
    *reply = StatusLocked();
    return grpc::Status::OK;
  });
}

grpc::Status CoordinatorService::Finish(grpc::ServerContext* /*context*/,
                                        const autodist::proto::FinishRequest* request,
                                        autodist::proto::FinishReply* /*reply*/) {
  return rpc::Serve([&]() -> grpc::Status {
    std::lock_guard lock(mutex_);
    CheckOpen();
    job_.Finish(request->node(), request->failed(), request->reason());
    changed_.notify_all();
    return grpc::Status::OK;
  });
}

grpc::Status CoordinatorService::Abort(grpc::ServerContext* /*context*/,
                                       const autodist::proto::AbortRequest* request,
                                       autodist::proto::AbortReply* /*reply*/) {
  return rpc::Serve([&]() -> grpc::Status {
    std::lock_guard lock(mutex_);
    CheckOpen();
    job_.Fail(fmt::format("aborted: {}",
                          request->reason().empty() ? "no reason given" : request->reason()));
    changed_.notify_all();
    return grpc::Status::OK;
  });
}

grpc::Status CoordinatorService::StoreSet(grpc::ServerContext* /*context*/,
                                          const autodist::proto::StoreSetRequest* request,
                                          autodist::proto::StoreSetReply* /*reply*/) {
  return rpc::Serve([&]() -> grpc::Status {
    const std::string& node = request->node();
    std::lock_guard lock(mutex_);
    CheckOpen();
    job_.RegisteredWorker(node, "StoreSet");
    if (job_.failed()) return Aborted(node);
    store_.Set(node, request->key(), request->value());
    changed_.notify_all();
    return grpc::Status::OK;
  });
}

grpc::Status CoordinatorService::StoreGet(grpc::ServerContext* context,
                                          const autodist::proto::StoreGetRequest* request,
                                          autodist::proto::StoreGetReply* reply) {
  return rpc::Serve([&]() -> grpc::Status {
    const std::string& node = request->node();
    const std::vector<std::string> keys(request->keys().begin(), request->keys().end());
    std::unique_lock lock(mutex_);
    CheckOpen();
    job_.RegisteredWorker(node, "StoreGet");
    store_.CheckGet(node, keys);
    if (job_.failed()) return Aborted(node);
    const WaitEnd end =
        WaitFor(lock, context, request->wait_ms(), [&] { return store_.Missing(keys).empty(); });
    if (end != WaitEnd::kReady) {
      std::vector<std::string> missing;
      for (const std::string& key : store_.Missing(keys)) missing.push_back("'" + key + "'");
      return WaitError(
          end, node, fmt::format("StoreGet: worker '{}'", node), request->wait_ms(),
          fmt::format("key{} {} to be set", missing.size() == 1 ? "" : "s", ListNodes(missing)));
    }
    for (std::string& value : store_.Get(node, keys)) reply->add_values(std::move(value));
    return grpc::Status::OK;
  });
}

}  // namespace autodist::coordinator
