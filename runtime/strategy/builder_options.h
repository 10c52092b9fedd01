// Builder options as users write them (`--option sync=true`, `chunkSize: 64` in a manifest),
// parsed once into typed values. Keys are accepted in AutoDist's snake_case (chunk_size) or the
// manifest's camelCase (chunkSize); errors name the builder, the option and what was expected.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "proto/synchronizers.pb.h"
#include "runtime/config/option_map.h"

namespace autodist::strategy {

// Raw options: key -> value text, as given.
using BuilderOptions = std::map<std::string, std::string>;

// Options of the PS family (AutoDist: local_proxy_variable, sync, staleness; ours: compressor
// and topk_fraction for the pushed gradients).
struct PsOptions {
  bool local_proxy_variable = false;
  bool sync = true;
  int staleness = 0;
  autodist::proto::AllReduceSynchronizer::Compressor compressor =
      autodist::proto::AllReduceSynchronizer::NoneCompressor;
  double topk_fraction = 0.01;
};

// Options of the all-reduce family (AutoDist: chunk_size, all_reduce_spec, compressor; ours: the
// parameters of the PowerSGD and TopK compressors).
struct AllReduceOptions {
  int chunk_size = 128;
  autodist::proto::AllReduceSynchronizer::Spec spec = autodist::proto::AllReduceSynchronizer::NCCL;
  autodist::proto::AllReduceSynchronizer::Compressor compressor =
      autodist::proto::AllReduceSynchronizer::NoneCompressor;
  int powersgd_rank = 1;
  int64_t powersgd_start_step = 0;
  int64_t min_compression_elements = 0;
  double topk_fraction = 0.01;
};

// Reads typed options for one builder (config::OptionMap, with the builder's own enums) and
// rejects any option it did not read.
class OptionReader {
 public:
  OptionReader(std::string builder, const BuilderOptions& options);

  bool Bool(const std::string& key, bool default_value);
  int Int(const std::string& key, int default_value, int minimum);
  int64_t Int64(const std::string& key, int64_t default_value);
  // A number in (minimum, maximum]: exclusive below, inclusive above.
  double Double(const std::string& key, double default_value, double minimum, double maximum);
  // Whether the user gave `key` (without marking it read).
  bool Given(const std::string& key) const;
  autodist::proto::AllReduceSynchronizer::Spec Spec(
      const std::string& key, autodist::proto::AllReduceSynchronizer::Spec default_value);
  autodist::proto::AllReduceSynchronizer::Compressor Compressor(
      const std::string& key, autodist::proto::AllReduceSynchronizer::Compressor default_value);

  // Throws InvalidArgument for every given option that no getter asked for, listing the
  // options this builder takes.
  void RejectUnread() const;

 private:
  std::string builder_;
  config::OptionMap options_;
};

// The PS-family options, validated (staleness >= 0; staleness > 0 needs sync=true; a push
// compressor other than PowerSGD, which needs an all-reduce).
PsOptions ReadPsOptions(OptionReader& reader);

// The all-reduce family's options: chunk_size (>= 1), all_reduce_spec (default `spec`), and,
// when `with_compressor`, compressor and its parameters, each accepted only with the compressor
// it belongs to.
AllReduceOptions ReadAllReduceOptions(OptionReader& reader,
                                      autodist::proto::AllReduceSynchronizer::Spec spec,
                                      bool with_compressor);

}  // namespace autodist::strategy
