// TensorBoard event files (events.out.tfevents.*): a writer that appends scalar summaries, and a
// reader that decodes them back (for tests, and for reports built from a run's files). The
// records are Event protos (proto/tensorboard_event.proto) in TFRecord framing (tfrecord.h);
// TensorBoard reads a directory of them as one run, and each subdirectory as a run of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autodist::observe {

struct Scalar {
  std::string tag;  // "loss", "eval/accuracy": TensorBoard groups tags by their first "/"
  double value = 0;
};

class EventFileWriter {
 public:
  // Creates `dir` (and its parents) and a new event file in it, whose first record names the
  // format version. Throws InvalidArgument naming `dir` when it cannot be created or written.
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Appends one event holding `scalars` at `step`, stamped with the current time. The bytes go
  // to the operating system before this returns, so a TensorBoard watching the directory sees
  // them and a crash of the process loses none. Throws InvalidArgument naming the file when the
  // write fails (a full disk).
  void WriteScalars(int64_t step, const std::vector<Scalar>& scalars);

  const std::string& path() const { return path_; }

 private:
  void Append(const std::string& event_bytes);

  std::string path_;
  int fd_ = -1;
};

struct ScalarPoint {
  std::string tag;
  int64_t step = 0;
  double wall_time = 0;  // seconds since the epoch
  double value = 0;
};

struct EventFileContents {
  std::string file_version;  // "brain.Event:2"
  std::vector<ScalarPoint> scalars;
};

// Decodes every scalar of an event file, in file order: simple values (how we and PyTorch's
// SummaryWriter write them) and 0-d float or double tensors (how TensorFlow 2 writes them).
// A torn last record (a file being written) is ignored. Throws InvalidArgument naming the file
// for anything else that is not an event file.
EventFileContents ReadEventFile(const std::string& path);

// The event files directly in `dir`, by name (which is by creation time); none when `dir` does
// not exist.
std::vector<std::string> EventFilesIn(const std::string& dir);

}  // namespace autodist::observe
