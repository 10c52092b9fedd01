// Where compressors are found: each compressor's file registers itself (its kind, its name, how to
// make its all-reduce form and, if it has one, how it compresses a parameter-server push), and
// everything else looks compressors up here, by kind or by the Strategy's wire value. A new
// compressor, such as a device one, is one more registration and no edit elsewhere. Consumers link
// autodist_compress whole, so that no registration is dropped by the linker.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "runtime/compress/compressor.h"
#include "runtime/compress/push_encoding.h"

namespace autodist::compress {

struct CompressorRegistration {
  CompressorKind kind = CompressorKind::kNone;
  const char* name = "";  // the Strategy's and the manifest's spelling: "HorovodCompressorEF"
  std::function<std::unique_ptr<Compressor>(const CompressorOptions&)> make;
  // Compresses one dense float32 gradient for a push; empty when the compressor needs an
  // all-reduce (PowerSGD), and for NoneCompressor, whose pushes travel as float32 unencoded.
  PushEncodeFunction encode_push;
  // Whether a parameter server can take this compressor's pushes (NoneCompressor: yes, as
  // float32).
  bool pushes = false;
  // Whether its pushes keep a residual per stream (PushState); without, encode_push gets a fresh
  // state each time.
  bool error_feedback = false;
};

// Adds `registration`; a second registration of a kind is a programming error (kInternal).
void RegisterCompressor(CompressorRegistration registration);

// The registration of `kind`; throws InvalidArgument listing the registered names when there is
// none.
const CompressorRegistration& FindCompressor(CompressorKind kind);

// The kind whose wire value (synchronizers.proto's Compressor enum) is `value`; throws
// InvalidArgument naming `what` and listing the registered compressors when none has it.
CompressorKind CompressorKindOfWireValue(int value, const std::string& what);

// "NoneCompressor, HorovodCompressor, ...": every registered name, in kind order.
std::string RegisteredCompressorNames();

// Registers a compressor at static-initialization time:
//   const CompressorRegistrar kRegistrar({...});
struct CompressorRegistrar {
  explicit CompressorRegistrar(CompressorRegistration registration) {
    RegisterCompressor(std::move(registration));
  }
};

}  // namespace autodist::compress
