// ProcessLog: output bytes in arbitrary chunks become prefixed lines in the log file, the last
// lines stay in memory and every line reaches the echo sink.
#include "launcher/process_log.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/launcher/launcher_test_util.h"

namespace autodist::launcher {
namespace {

using Lines = std::vector<std::string>;

TEST(ProcessLogTest, LinesSplitAcrossChunksArePrefixedInTheFile) {
  TempDir dir;
  ProcessLog log("worker-0", dir / "worker-0.log", 10, nullptr);
  log.Append("hel");
  log.Append("lo\nwor");
  log.Append("ld\n");
  EXPECT_EQ(ReadText(dir / "worker-0.log"), "[worker-0] hello\n[worker-0] world\n");
  EXPECT_EQ(log.LastLines(10), (Lines{"hello", "world"}));
  EXPECT_EQ(log.path(), dir / "worker-0.log");
}

TEST(ProcessLogTest, AFinalLineWithoutNewlineIsWrittenWhenTheOutputEnds) {
  TempDir dir;
  ProcessLog log("ps-1", dir / "ps-1.log", 10, nullptr);
  log.Append("first\nlast words");
  EXPECT_EQ(ReadText(dir / "ps-1.log"), "[ps-1] first\n");
  EXPECT_EQ(log.LastLines(5), (Lines{"first"}));
  log.Finish();
  EXPECT_EQ(ReadText(dir / "ps-1.log"), "[ps-1] first\n[ps-1] last words\n");
  EXPECT_EQ(log.LastLines(5), (Lines{"first", "last words"}));
  log.Append("ignored after the end\n");
  log.Finish();
  EXPECT_EQ(log.LastLines(5), (Lines{"first", "last words"}));
}

TEST(ProcessLogTest, EmptyLinesAndCarriageReturns) {
  TempDir dir;
  ProcessLog log("p", dir / "p.log", 10, nullptr);
  log.Append("a\r\n\nb\n");
  log.Finish();
  EXPECT_EQ(ReadText(dir / "p.log"), "[p] a\n[p] \n[p] b\n");
  EXPECT_EQ(log.LastLines(10), (Lines{"a", "", "b"}));
}

TEST(ProcessLogTest, KeepsOnlyTheLastLines) {
  TempDir dir;
  ProcessLog log("p", dir / "p.log", 3, nullptr);
  log.Append("1\n2\n3\n4\n5\n");
  EXPECT_EQ(log.LastLines(10), (Lines{"3", "4", "5"}));
  EXPECT_EQ(log.LastLines(2), (Lines{"4", "5"}));
  EXPECT_TRUE(log.LastLines(0).empty());
  // The file keeps everything.
  EXPECT_EQ(ReadText(dir / "p.log"), "[p] 1\n[p] 2\n[p] 3\n[p] 4\n[p] 5\n");
}

TEST(ProcessLogTest, EveryLineReachesTheEchoSink) {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> echoed;
  ProcessLog log("worker-3", dir / "w.log", 10, [&](std::string_view name, std::string_view line) {
    echoed.emplace_back(std::string(name), std::string(line));
  });
  log.Append("x\ny");
  EXPECT_EQ(echoed.size(), 1u);
  log.Finish();
  ASSERT_EQ(echoed.size(), 2u);
  EXPECT_EQ(echoed[0], (std::pair<std::string, std::string>{"worker-3", "x"}));
  EXPECT_EQ(echoed[1], (std::pair<std::string, std::string>{"worker-3", "y"}));
}

TEST(ProcessLogTest, OverlongLinesAreCutIntoPieces) {
  TempDir dir;
  constexpr size_t kMax = ProcessLog::kMaxLineBytes;
  ProcessLog log("p", dir / "p.log", 10, nullptr);
  // A complete line of two and a bit pieces.
  log.Append(std::string(2 * kMax + 10, 'a') + "\n");
  Lines lines = log.LastLines(10);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], std::string(kMax, 'a'));
  EXPECT_EQ(lines[1], std::string(kMax, 'a'));
  EXPECT_EQ(lines[2], std::string(10, 'a'));

  // Output that never ends its line is not buffered beyond one piece.
  log.Append(std::string(kMax + 5, 'b'));
  lines = log.LastLines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], std::string(kMax, 'b'));
  log.Append("c\n");
  EXPECT_EQ(log.LastLines(1), (Lines{"bbbbbc"}));
}

TEST(ProcessLogTest, ALogFileThatCannotBeCreatedIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir / "missing-dir/p.log";
  const Error error = ErrorOf([&] { ProcessLog log("p", path, 10, nullptr); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  EXPECT_NE(std::string(error.what()).find("'p'"), std::string::npos) << error.what();
}

TEST(ProcessLogTest, AnExistingLogIsReplaced) {
  TempDir dir;
  {
    ProcessLog log("p", dir / "p.log", 10, nullptr);
    log.Append("old run\n");
  }
  ProcessLog log("p", dir / "p.log", 10, nullptr);
  log.Append("new run\n");
  EXPECT_EQ(ReadText(dir / "p.log"), "[p] new run\n");
  EXPECT_EQ(log.WriteError(), "");
}

TEST(ProcessLogTest, AWriteErrorIsRecordedAndLinesAreStillKept) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  ProcessLog log("p", "/dev/full", 10, nullptr);
  log.Append("one\ntwo\n");
  EXPECT_NE(log.WriteError().find("/dev/full"), std::string::npos) << log.WriteError();
  EXPECT_EQ(log.LastLines(5), (Lines{"one", "two"}));
}

}  // namespace
}  // namespace autodist::launcher
