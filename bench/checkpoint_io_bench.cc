// What a large model costs to load, checkpoint and restore, measured on the real code paths
// (scripts/bench-large-model.sh runs it beside dd and a plain read of the same files):
//
//   checkpoint_io_bench load MODEL            the initializers as a Session reads them
//   checkpoint_io_bench write MODEL CKPT      load, then one checkpoint of every variable
//   checkpoint_io_bench read CKPT             every tensor of a checkpoint, checksums verified
//   checkpoint_io_bench read-file FILE        a plain read of FILE into memory (the peer)
//
// Each prints one JSON line: seconds, bytes, and for `write` the resident set before the
// checkpoint and its peak during it (VmHWM, reset first through /proc/self/clear_refs).
#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/exec/initializer_value.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace ad = autodist;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
int64_t StatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

// Every initializer of the model at `path`, read as the execution plan reads them.
ad::checkpoint::NamedTensors LoadInitializers(const std::string& path) {
  onnx::ModelProto model;
  AD_CHECK(model.ParseFromString(ad::ReadFileBytes(path, "model")), kInvalidArgument,
           "'{}' is not an ONNX model", path);
  ad::checkpoint::NamedTensors out;
  for (const onnx::TensorProto& t : model.graph().initializer()) {
    out.emplace_back(t.name(),
                     ad::exec::InitializerValue(t, path, "initializer '" + t.name() + "'"));
  }
  return out;
}

int64_t TotalBytes(const ad::checkpoint::NamedTensors& tensors) {
  int64_t total = 0;
  for (const auto& [name, value] : tensors) total += static_cast<int64_t>(value.nbytes());
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Large-model load, checkpoint write and read on the real code paths");
  app.require_subcommand(1);
  std::string model;
  std::string checkpoint;
  std::string file;
  CLI::App* load = app.add_subcommand("load", "Read the model's initializers");
  load->add_option("model", model)->required();
  CLI::App* write = app.add_subcommand("write", "Load, then write one checkpoint");
  write->add_option("model", model)->required();
  write->add_option("checkpoint", checkpoint)->required();
  CLI::App* read = app.add_subcommand("read", "Read every tensor of a checkpoint");
  read->add_option("checkpoint", checkpoint)->required();
  CLI::App* read_file = app.add_subcommand("read-file", "Read a file into memory");
  read_file->add_option("file", file)->required();
  CLI11_PARSE(app, argc, argv);

  try {
    if (*load) {
      const auto start = Clock::now();
      const auto tensors = LoadInitializers(model);
      std::cout << fmt::format(R"({{"what": "load", "seconds": {:.3f}, "bytes": {}}})",
                               Since(start), TotalBytes(tensors))
                << std::endl;
    } else if (*write) {
      ad::checkpoint::CheckpointContents contents;
      contents.variables = LoadInitializers(model);
      const int64_t before = StatusBytes("VmRSS");
      std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS
      const auto start = Clock::now();
      ad::checkpoint::WriteCheckpointFile(checkpoint, contents);
      const double seconds = Since(start);
      std::cout << fmt::format(
                       R"({{"what": "write", "seconds": {:.3f}, "bytes": {}, "rss_before": {}, )"
                       R"("rss_peak": {}}})",
                       seconds, ad::checkpoint::CheckpointFileSize(contents), before,
                       StatusBytes("VmHWM"))
                << std::endl;
    } else if (*read) {
      const auto start = Clock::now();
      const ad::checkpoint::CheckpointReader reader(checkpoint);
      int64_t bytes = 0;
      for (const auto* section : {&reader.variables(), &reader.states(), &reader.optimizer()}) {
        for (const auto& entry : *section)
          bytes += static_cast<int64_t>(reader.Read(entry).nbytes());
      }
      std::cout << fmt::format(R"({{"what": "read", "seconds": {:.3f}, "bytes": {}}})",
                               Since(start), bytes)
                << std::endl;
    } else {
      const auto start = Clock::now();
      const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      AD_CHECK(fd >= 0, kNotFound, "cannot open '{}'", file);
      const off_t size = ::lseek(fd, 0, SEEK_END);
      // Uninitialized, as tensor storage is: zeroing it first would charge the peer a pass.
      const auto buffer = std::make_unique_for_overwrite<char[]>(static_cast<size_t>(size));
      ::close(fd);
      ad::ReadFileRange(file, 0, buffer.get(), static_cast<size_t>(size), "file");
      std::cout << fmt::format(R"({{"what": "read-file", "seconds": {:.3f}, "bytes": {}}})",
                               Since(start), size)
                << std::endl;
    }
  } catch (const ad::Error& error) {
    std::cerr << "checkpoint_io_bench: error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
