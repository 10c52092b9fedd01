#include "runtime/data/loader.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <string>
#include <mutex>
#include <thread>

#include "runtime/common/error.h"
#include "runtime/data/sampler.h"

namespace autodist::data {

class Loader::Impl {
 public:
  Impl(std::shared_ptr<const Dataset> dataset, LoaderOptions options, RowShapes row_shapes,
       Position start)
      : dataset_(std::move(dataset)),
        options_(options),
        row_shapes_(std::move(row_shapes)),
        next_(start),
        produce_(start) {
    Validate();
    if (options_.prefetch > 0) thread_ = std::thread([this] { Produce(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  Batch Next() {
    if (options_.prefetch == 0) {
      Batch batch = Make(next_);
      next_ = After(next_);
      if (!options_.device.is_cpu()) {
        for (auto& [name, feed] : batch.feeds) feed = feed.To(options_.device);
      }
      return batch;
    }
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !queue_.empty(); });
    // A failed batch stays at the head of the queue, so every later call reports it too.
    if (queue_.front().error) std::rethrow_exception(queue_.front().error);
    Batch batch = std::move(queue_.front().batch);
    // The copies started on the prefetch thread: the device's work queued from here on (this
    // thread's) reads the feeds after they arrive.
    for (auto& [name, upload] : queue_.front().uploads) batch.feeds[name] = upload.Take();
    queue_.pop_front();
    lock.unlock();
    changed_.notify_all();
    next_ = After(batch.position);
    return batch;
  }

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t rows_per_epoch() const { return shard_size_; }
  Position position() const { return next_; }

 private:
  struct Item {
    Batch batch;
    std::map<std::string, tensor::TensorUpload> uploads;  // the feeds, on their way to the device
    std::exception_ptr error;
  };

  void Validate() {
    AD_CHECK(dataset_ != nullptr, kInvalidArgument, "the loader needs a dataset");
    AD_CHECK(options_.batch_size >= 1, kInvalidArgument, "batch_size must be at least 1, got {}",
             options_.batch_size);
    AD_CHECK(options_.world_size >= 1, kInvalidArgument, "world_size must be at least 1, got {}",
             options_.world_size);
    AD_CHECK(options_.rank >= 0 && options_.rank < options_.world_size, kInvalidArgument,
             "rank {} is outside [0, {}) for world_size {}", options_.rank, options_.world_size,
             options_.world_size);
    AD_CHECK(options_.prefetch >= 0, kInvalidArgument, "prefetch must be 0 or more, got {}",
             options_.prefetch);
    const int64_t n = dataset_->size();
    AD_CHECK(n > 0, kInvalidArgument, "the dataset is empty (0 rows in '{}')",
             dataset_->columns().front().source);
    shard_size_ = ShardSize(n, options_.world_size, options_.drop_last);
    AD_CHECK(shard_size_ > 0, kInvalidArgument,
             "with drop_last, {} rows leave none for each of {} ranks", n, options_.world_size);
    batches_per_epoch_ = options_.drop_last_batch
                             ? shard_size_ / options_.batch_size
                             : (shard_size_ + options_.batch_size - 1) / options_.batch_size;
    AD_CHECK(batches_per_epoch_ > 0, kInvalidArgument,
             "with drop_last_batch, batch_size {} exceeds the {} rows each rank reads per epoch, "
             "so no batch would ever be produced",
             options_.batch_size, shard_size_);
    AD_CHECK(next_.epoch >= 0 && next_.batch >= 0 && next_.batch < batches_per_epoch_,
             kInvalidArgument,
             "start position (epoch {}, batch {}) is invalid: epochs count from 0 and an epoch "
             "has batches 0..{}",
             next_.epoch, next_.batch, batches_per_epoch_ - 1);
    dataset_->FeedRowShapes(row_shapes_);  // fails now rather than on the prefetch thread
  }

  Position After(Position position) const {
    if (++position.batch == batches_per_epoch_) position = {position.epoch + 1, 0};
    return position;
  }

  // Builds the batch at `position`; runs on one thread at a time (the prefetch thread, or the
  // caller's without prefetch), which alone touches the shard cache.
  Batch Make(Position position) {
    if (shard_epoch_ != position.epoch) {
      const std::vector<int64_t> order =
          EpochOrder(dataset_->size(), position.epoch, options_.shuffle, options_.seed);
      shard_ = Shard(order, options_.rank, options_.world_size, options_.drop_last);
      shard_epoch_ = position.epoch;
    }
    const int64_t begin = position.batch * options_.batch_size;
    const int64_t end = std::min(begin + options_.batch_size, shard_size_);
    const std::vector<int64_t> rows(shard_.begin() + begin, shard_.begin() + end);
    return Batch{dataset_->Batch(rows, row_shapes_), position, end - begin};
  }

  void Produce() {
    while (true) {
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] {
          return stop_ || queue_.size() < static_cast<size_t>(options_.prefetch);
        });
        if (stop_) return;
      }
      Item item;
      try {
        item.batch = Make(produce_);
        if (!options_.device.is_cpu()) {
          for (const auto& [name, feed] : item.batch.feeds) {
            item.uploads.emplace(name, tensor::TensorUpload::Start(feed, options_.device));
          }
        }
      } catch (...) {
        item.error = std::current_exception();
      }
      const bool failed = item.error != nullptr;
      {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(item));
      }
      changed_.notify_all();
      if (failed) return;
      produce_ = After(produce_);
    }
  }

  const std::shared_ptr<const Dataset> dataset_;
  const LoaderOptions options_;
  const RowShapes row_shapes_;
  int64_t shard_size_ = 0;
  int64_t batches_per_epoch_ = 0;

  Position next_;  // consumer side: the batch Next() returns next

  // Producer side.
  Position produce_;
  int64_t shard_epoch_ = -1;
  std::vector<int64_t> shard_;

  std::mutex mutex_;
  std::condition_variable changed_;  // queue_ or stop_ changed
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread thread_;  // started in the constructor body, once every member is initialized
};

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, RowShapes row_shapes,
               Position start)
    : impl_(std::make_unique<Impl>(std::move(dataset), options, std::move(row_shapes), start)) {}

Loader::~Loader() = default;
Loader::Loader(Loader&&) noexcept = default;
Loader& Loader::operator=(Loader&&) noexcept = default;

Batch Loader::Next() { return impl_->Next(); }
int64_t Loader::batches_per_epoch() const { return impl_->batches_per_epoch(); }
int64_t Loader::rows_per_epoch() const { return impl_->rows_per_epoch(); }
Position Loader::position() const { return impl_->position(); }

}  // namespace autodist::data
