#include "runtime/observe/event_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/observe/tfrecord.h"
#include "tests/error_of.h"

namespace autodist::observe {
namespace {

using autodist::testing::ErrorOf;
namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("event_file_test_" + name);
  fs::remove_all(dir);
  return dir.string();
}

// Protocol-buffer wire format written by hand, so that the field numbers are checked against
// TensorFlow's event.proto and summary.proto as published, not against our own .proto.
std::string Varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}
std::string Key(int field, int wire_type) { return Varint((field << 3) | wire_type); }
std::string Bytes(int field, const std::string& payload) {
  return Key(field, 2) + Varint(payload.size()) + payload;
}
template <typename T>
std::string Fixed(int field, T value) {
  std::string out = Key(field, sizeof(T) == 8 ? 1 : 5);
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  return out + std::string(raw, sizeof(T));
}
template <typename T>
std::string Raw(T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  return std::string(raw, sizeof(T));
}

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5.
// Summary: value = 1. Value: tag = 1, simple_value = 2 (float), tensor = 8, metadata = 9.
// TensorProto: dtype = 1, tensor_shape = 2, tensor_content = 4, float_val = 5 (packed).
std::string VersionEvent() { return Fixed(1, 1700000000.0) + Bytes(3, "brain.Event:2"); }

std::string ScalarEvents() {
  const std::string simple = Bytes(1, "a") + Fixed(2, 2.5F);
  const std::string plugin = Bytes(1, Bytes(1, "scalars"));
  const std::string float_tensor =
      Key(1, 0) + Varint(1) + Bytes(2, "") + Bytes(5, Raw(3.25F));  // DT_FLOAT, packed float_val
  const std::string double_tensor =
      Key(1, 0) + Varint(2) + Bytes(2, "") + Bytes(4, Raw(-0.125));  // DT_DOUBLE, tensor_content
  const std::string summary = Bytes(1, simple) +
                              Bytes(1, Bytes(1, "t") + Bytes(9, plugin) + Bytes(8, float_tensor)) +
                              Bytes(1, Bytes(1, "d") + Bytes(8, double_tensor));
  return Fixed(1, 1700000001.5) + Key(2, 0) + Varint(7) + Bytes(5, summary);
}

TEST(EventFileTest, DecodesTensorFlowsFieldNumbers) {
  const std::string dir = FreshDir("decode");
  fs::create_directories(dir);
  const std::string path = dir + "/events.out.tfevents.1700000000.host";
  WriteFileBytes(path, FrameRecord(VersionEvent()) + FrameRecord(ScalarEvents()));
  const EventFileContents contents = ReadEventFile(path);
  EXPECT_EQ(contents.file_version, "brain.Event:2");
  ASSERT_EQ(contents.scalars.size(), 3u);
  EXPECT_EQ(contents.scalars[0].tag, "a");
  EXPECT_EQ(contents.scalars[0].step, 7);
  EXPECT_DOUBLE_EQ(contents.scalars[0].wall_time, 1700000001.5);
  EXPECT_DOUBLE_EQ(contents.scalars[0].value, 2.5);
  EXPECT_EQ(contents.scalars[1].tag, "t");
  EXPECT_DOUBLE_EQ(contents.scalars[1].value, 3.25);
  EXPECT_EQ(contents.scalars[2].tag, "d");
  EXPECT_DOUBLE_EQ(contents.scalars[2].value, -0.125);
  EXPECT_EQ(EventFilesIn(dir), std::vector<std::string>{path});
}

TEST(EventFileTest, WrittenScalarsReadBack) {
  const std::string dir = FreshDir("write") + "/nested/run";
  std::string path;
  {
    EventFileWriter writer(dir);
    path = writer.path();
    writer.WriteScalars(10, {{"train/loss", 0.75}, {"perf/step_seconds", 0.002}});
    writer.WriteScalars(20, {{"train/loss", 0.5}});
    // Readable while the writer is open: TensorBoard reads files being written.
    EXPECT_EQ(ReadEventFile(path).scalars.size(), 3u);
  }
  EXPECT_EQ(fs::path(path).parent_path(), fs::path(dir));
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u) << path;
  const EventFileContents contents = ReadEventFile(path);
  EXPECT_EQ(contents.file_version, "brain.Event:2");
  ASSERT_EQ(contents.scalars.size(), 3u);
  EXPECT_EQ(contents.scalars[0].tag, "train/loss");
  EXPECT_EQ(contents.scalars[0].step, 10);
  EXPECT_FLOAT_EQ(static_cast<float>(contents.scalars[0].value), 0.75F);
  EXPECT_EQ(contents.scalars[1].tag, "perf/step_seconds");
  EXPECT_FLOAT_EQ(static_cast<float>(contents.scalars[1].value), 0.002F);
  EXPECT_EQ(contents.scalars[2].step, 20);
  EXPECT_GT(contents.scalars[2].wall_time, 1.6e9);  // seconds since the epoch, stamped now
  EXPECT_GE(contents.scalars[2].wall_time, contents.scalars[0].wall_time);
}

TEST(EventFileTest, UnusableDirectoryIsNamed) {
  const std::string dir = FreshDir("blocked");
  fs::create_directories(dir);
  WriteFileBytes(dir + "/file", "not a directory");
  const Error error = ErrorOf([&] { EventFileWriter writer(dir + "/file/run"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("TensorBoard directory " + dir + "/file/run"),
            std::string::npos)
      << error.what();
}

TEST(EventFileTest, NotAnEventFileIsNamed) {
  const std::string dir = FreshDir("garbage");
  fs::create_directories(dir);
  const std::string path = dir + "/events.out.tfevents.1.x";
  WriteFileBytes(path, std::string(64, 'x'));
  const std::string message = ErrorOf([&] { ReadEventFile(path); }).what();
  EXPECT_NE(message.find(path), std::string::npos) << message;
  // Framed, but not an Event: a record whose bytes are no protocol buffer.
  WriteFileBytes(path, FrameRecord(VersionEvent()) + FrameRecord("\xff\xff\xff"));
  const std::string not_event = ErrorOf([&] { ReadEventFile(path); }).what();
  EXPECT_NE(not_event.find("record 1 is not an Event"), std::string::npos) << not_event;
  EXPECT_TRUE(EventFilesIn(dir + "/missing").empty());
}

}  // namespace
}  // namespace autodist::observe
