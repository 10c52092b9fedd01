#include "runtime/strategy/summary.h"

#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "runtime/strategy/compiler.h"
#include "tests/strategy/test_support.h"

namespace autodist::strategy {
namespace {

using testing::CpuNodes;
using testing::FloatVariable;
using testing::GpuNodes;

CompileResult CompileWith(const std::vector<graph::Variable>& variables,
                          const ResourceSpec& resources, const std::string& builder) {
  CompileRequest request;
  request.builder = builder;
  return Compile(variables, resources, request);
}

TEST(SummaryTest, BytesPerServerFollowThePlacement) {
  // Same model as PartitionedPsTest: a gets 48 + 2x4 + 20, b 48 + 2x4, c 3x4 + 4 + 64.
  const std::vector<graph::Variable> variables = {
      FloatVariable("w", {6, 4}), FloatVariable("p", {7}), FloatVariable("s", {}),
      FloatVariable("cf", {4, 4}, false, false), FloatVariable("r", {1, 5})};
  const ResourceSpec resources = CpuNodes(3);
  const StrategySummary summary =
      Summarize(CompileWith(variables, resources, "PartitionedPS").strategy, variables, resources);
  EXPECT_EQ(summary.variables, 5);
  EXPECT_EQ(summary.partitioned_variables, 2);
  EXPECT_EQ(summary.shards, 2 + 7 + 1 + 1 + 1);
  EXPECT_EQ(summary.ps_shards, summary.shards);
  EXPECT_EQ(summary.allreduce_groups, 0);
  ASSERT_EQ(summary.bytes_per_ps.size(), 3u);
  EXPECT_EQ(summary.bytes_per_ps[0], std::make_pair(std::string("10.0.0.1:CPU:0"), int64_t{76}));
  EXPECT_EQ(summary.bytes_per_ps[1], std::make_pair(std::string("10.0.0.2:CPU:0"), int64_t{56}));
  EXPECT_EQ(summary.bytes_per_ps[2], std::make_pair(std::string("10.0.0.3:CPU:0"), int64_t{80}));
}

TEST(SummaryTest, UnevenShardsAreSizedByRows) {
  // 6 rows in 4 shards: 2, 2, 1, 1 rows of 16 B -> a: 32 + 16, b: 32 + 16.
  const std::vector<graph::Variable> variables = {FloatVariable("w", {6, 4})};
  const ResourceSpec resources = CpuNodes(2);
  const StrategySummary summary = Summarize(
      CompileWith(variables, resources, "UnevenPartitionedPS").strategy, variables, resources);
  EXPECT_EQ(summary.bytes_per_ps[0].second, 48);
  EXPECT_EQ(summary.bytes_per_ps[1].second, 48);
}

TEST(SummaryTest, CountsAllReduceGroups) {
  std::vector<graph::Variable> variables;
  for (int i = 0; i < 300; ++i) variables.push_back(FloatVariable("v" + std::to_string(i), {3}));
  const ResourceSpec resources = GpuNodes({2});
  const StrategySummary summary =
      Summarize(CompileWith(variables, resources, "AllReduce").strategy, variables, resources);
  EXPECT_EQ(summary.allreduce_shards, 300);
  EXPECT_EQ(summary.allreduce_groups, 3);  // 128 per group: 0, 1, 2
  EXPECT_EQ(summary.replicas, 2);
  const std::string text = FormatSummary(summary, "AllReduce");
  EXPECT_NE(text.find("synchronized by all-reduce: 300 in 3 group(s)"), std::string::npos);
  EXPECT_EQ(text.find("bytes per parameter server"), std::string::npos);
}

TEST(SummaryTest, UnknownVariableInStrategyIsAnError) {
  autodist::proto::Strategy strategy;
  strategy.add_node_config()->set_var_name("ghost");
  EXPECT_THROW(Summarize(strategy, {FloatVariable("w", {2})}, CpuNodes(1)), Error);
}

TEST(SummaryTest, FormatBytesUsesBinaryUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 20), "3.0 MiB");
}

}  // namespace
}  // namespace autodist::strategy
