#include "runtime/observe/event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "proto/tensorboard_event.pb.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/observe/tfrecord.h"

namespace autodist::observe {
namespace {

namespace tb = autodist::tensorboard;

constexpr std::string_view kFilePrefix = "events.out.tfevents.";
constexpr std::string_view kFileVersion = "brain.Event:2";
// tensorflow.DataType values of the scalars we decode.
constexpr int kDtFloat = 1;
constexpr int kDtDouble = 2;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string HostName() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return "localhost";
  return name.data();
}

// TensorBoard's own writers name files "events.out.tfevents.<seconds>.<host>..." and read them
// in name order; the process id keeps two writers started in the same second apart.
std::string NewFileName() {
  const auto seconds = static_cast<long long>(NowSeconds());
  return fmt::format("{}{:010d}.{}.{}", kFilePrefix, seconds, HostName(), getpid());
}

// The value of a scalar summary, or false when the value is not a scalar (an image, a
// histogram: skipped).
bool ScalarOf(const tb::Summary::Value& value, double& out) {
  if (value.has_simple_value()) {
    out = value.simple_value();
    return true;
  }
  if (!value.has_tensor()) return false;
  const tb::TensorProto& tensor = value.tensor();
  if (tensor.tensor_shape().dim_size() != 0) return false;
  if (tensor.dtype() == kDtFloat) {
    if (tensor.float_val_size() == 1) {
      out = tensor.float_val(0);
      return true;
    }
    if (tensor.tensor_content().size() == sizeof(float)) {
      float f;
      std::memcpy(&f, tensor.tensor_content().data(), sizeof(f));
      out = f;
      return true;
    }
  } else if (tensor.dtype() == kDtDouble) {
    if (tensor.double_val_size() == 1) {
      out = tensor.double_val(0);
      return true;
    }
    if (tensor.tensor_content().size() == sizeof(double)) {
      std::memcpy(&out, tensor.tensor_content().data(), sizeof(out));
      return true;
    }
  }
  return false;
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  AD_CHECK(!error, kInvalidArgument, "TensorBoard directory {}: cannot create it: {}", dir,
           error.message());
  // A new file each time, never another writer's: two writers of the same second, host and
  // process id (a restarted container is pid 1 again) get a numbered suffix.
  const std::string name = NewFileName();
  for (int suffix = 0; fd_ < 0; ++suffix) {
    path_ = (std::filesystem::path(dir) / (suffix == 0 ? name : fmt::format("{}.{}", name, suffix)))
                .string();
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    AD_CHECK(fd_ >= 0 || (errno == EEXIST && suffix < 1000), kInvalidArgument,
             "TensorBoard directory {}: cannot create {}: {}", dir, path_, std::strerror(errno));
  }
  tb::Event event;
  event.set_wall_time(NowSeconds());
  event.set_file_version(std::string(kFileVersion));
  try {
    Append(event.SerializeAsString());
  } catch (const Error&) {
    ::close(fd_);
    throw;
  }
}

EventFileWriter::~EventFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::WriteScalars(int64_t step, const std::vector<Scalar>& scalars) {
  tb::Event event;
  event.set_wall_time(NowSeconds());
  event.set_step(step);
  tb::Summary* summary = event.mutable_summary();
  for (const Scalar& scalar : scalars) {
    tb::Summary::Value* value = summary->add_value();
    value->set_tag(scalar.tag);
    value->set_simple_value(static_cast<float>(scalar.value));
  }
  Append(event.SerializeAsString());
}

void EventFileWriter::Append(const std::string& event_bytes) {
  const std::string record = FrameRecord(event_bytes);
  size_t written = 0;
  while (written < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + written, record.size() - written);
    if (n < 0 && errno == EINTR) continue;
    AD_CHECK(n > 0, kInvalidArgument, "TensorBoard event file {}: write failed: {}", path_,
             n < 0 ? std::strerror(errno) : "no progress");
    written += static_cast<size_t>(n);
  }
}

EventFileContents ReadEventFile(const std::string& path) {
  const std::string bytes = ReadFileBytes(path, "TensorBoard event file");
  EventFileContents contents;
  const std::vector<std::string> records =
      UnframeRecords(bytes, fmt::format("TensorBoard event file {}", path), true);
  for (size_t i = 0; i < records.size(); ++i) {
    tb::Event event;
    AD_CHECK(event.ParseFromString(records[i]), kInvalidArgument,
             "TensorBoard event file {}: record {} is not an Event", path, i);
    if (event.has_file_version()) contents.file_version = event.file_version();
    if (!event.has_summary()) continue;
    for (const tb::Summary::Value& value : event.summary().value()) {
      double scalar = 0;
      if (ScalarOf(value, scalar)) {
        contents.scalars.push_back(
            ScalarPoint{value.tag(), event.step(), event.wall_time(), scalar});
      }
    }
  }
  AD_CHECK(!contents.file_version.empty() || records.empty(), kInvalidArgument,
           "TensorBoard event file {}: no record names the file version (\"{}\")", path,
           kFileVersion);
  return contents;
}

std::vector<std::string> EventFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with(kFilePrefix)) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace autodist::observe
