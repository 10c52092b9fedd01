#include "runtime/sync/traced_communicator.h"

#include <fmt/format.h>

#include "runtime/observe/timeline.h"

namespace autodist::sync {
namespace {

// "\"bytes\":4096,\"type\":\"float16\"": what a span of a collective carries.
std::string Args(size_t count, collective::ElementType type) {
  return fmt::format(R"("bytes":{},"type":"{}")", count * collective::ElementBytes(type),
                     collective::ElementTypeName(type));
}

observe::SpanText Text(const char* collective, const std::string& tag, std::string args) {
  return observe::SpanText{fmt::format("{} {}", collective, tag), std::move(args)};
}

}  // namespace

void TracedCommunicator::AllReduceSum(void* data, size_t count, collective::ElementType type,
                                      collective::AllReduceAlgorithm algorithm,
                                      const std::string& tag) {
  observe::Span span("collective", [&] { return Text("all-reduce", tag, Args(count, type)); });
  inner_->AllReduceSum(data, count, type, algorithm, tag);
}

void TracedCommunicator::AllGather(const void* in, size_t count, collective::ElementType type,
                                   void* out, const std::string& tag) {
  observe::Span span("collective", [&] { return Text("all-gather", tag, Args(count, type)); });
  inner_->AllGather(in, count, type, out, tag);
}

void TracedCommunicator::ReduceScatterSum(const void* in, void* out, size_t count,
                                          collective::ElementType type, const std::string& tag) {
  observe::Span span("collective", [&] { return Text("reduce-scatter", tag, Args(count, type)); });
  inner_->ReduceScatterSum(in, out, count, type, tag);
}

std::vector<size_t> TracedCommunicator::AllGatherV(const void* in, size_t count,
                                                   collective::ElementType type,
                                                   std::vector<std::byte>& out,
                                                   const std::string& tag) {
  observe::Span span("collective", [&] { return Text("all-gatherv", tag, Args(count, type)); });
  return inner_->AllGatherV(in, count, type, out, tag);
}

void TracedCommunicator::Broadcast(void* data, size_t bytes, int root, const std::string& tag) {
  observe::Span span("collective",
                     [&] { return Text("broadcast", tag, fmt::format(R"("bytes":{})", bytes)); });
  inner_->Broadcast(data, bytes, root, tag);
}

void TracedCommunicator::Barrier(const std::string& tag) {
  observe::Span span("collective", [&] { return Text("barrier", tag, ""); });
  inner_->Barrier(tag);
}

}  // namespace autodist::sync
