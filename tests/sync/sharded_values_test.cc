// A checkpoint whose parameter-server shards the servers wrote themselves: the pieces the chief
// records for them rebuild every whole variable and optimizer slot, under PartitionedPS over two
// servers.
#include "runtime/sync/sharded_values.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/strategy/compiler.h"
#include "tests/strategy/test_support.h"

namespace autodist::sync {
namespace {

using strategy::testing::FloatVariable;

namespace fs = std::filesystem;
using tensor::Tensor;

Tensor Ramp(tensor::Shape shape, float start) {
  Tensor t(tensor::DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(ShardedValuesTest, PiecesOfTheServersShardFilesRebuildTheWholeValues) {
  const std::vector<graph::Variable> model = {FloatVariable("embedding", {10, 4}),
                                              FloatVariable("w", {3, 4}), FloatVariable("b", {3})};
  const auto resources = strategy::ResourceSpec::FromReplicaCounts({2, 0, 1, 2, std::nullopt});
  strategy::CompileRequest request;
  request.builder = "PartitionedPS";
  const StrategyPlan plan =
      PlanStrategy(strategy::Compile(model, resources, request).strategy, model, resources);
  ASSERT_TRUE(plan.Variable("embedding").partitioned);

  TensorMap whole = {
      {"embedding", Ramp({10, 4}, 0)}, {"w", Ramp({3, 4}, 100)}, {"b", Ramp({3}, 200)}};
  TensorMap slots;  // Adam's buffers, shaped like the variable, and its step count
  for (const auto& [name, value] : whole) {
    slots[name + "/exp_avg"] = Ramp(value.shape(), 1000);
    Tensor step(tensor::DType::kInt64, {});
    step.data<int64_t>()[0] = 7;
    slots[name + "/step"] = step;
  }
  const TensorMap shard_values = SplitVariables(plan, whole);
  const TensorMap shard_slots = SplitOptimizerState(plan, slots);

  // What each server would write for Save: its hosted shards and their slots.
  const std::string dir = ::testing::TempDir() + "/sharded_values_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = checkpoint::CheckpointPath(dir, 5);
  std::map<std::string, autodist::proto::SaveReply> saved;
  for (size_t i = 0; i < plan.ps_nodes.size(); ++i) {
    checkpoint::CheckpointContents contents;
    autodist::proto::SaveReply& reply = saved[plan.ps_nodes[i]];
    const auto add = [](checkpoint::NamedTensors& list, const std::string& name, const Tensor& t,
                        autodist::proto::SavedTensor* out) {
      list.emplace_back(name, t);
      out->set_name(name);
      for (const int64_t dim : t.shape()) out->add_dims(dim);
      out->set_data_type(static_cast<int32_t>(t.dtype()));
    };
    for (const ShardPlan* shard : plan.HostedBy(plan.ps_nodes[i])) {
      add(contents.variables, shard->name, shard_values.at(shard->name), reply.add_values());
      for (const char* slot : {"exp_avg", "step"}) {
        const std::string key = shard->name + "/" + slot;
        add(contents.optimizer, key, shard_slots.at(key), reply.add_optimizer_state());
      }
    }
    checkpoint::WriteCheckpointFile(checkpoint::ShardFilePath(path, static_cast<int>(i)), contents);
  }

  checkpoint::CheckpointContents main;
  main.meta.step = 5;
  PiecesOfSavedShards(plan, saved, path, main.pieced_variables, main.pieced_optimizer);
  EXPECT_EQ(main.pieced_variables.size(), 3U);
  EXPECT_EQ(main.pieced_optimizer.size(), 6U);
  checkpoint::WriteCheckpoint(dir, main, 3);

  const checkpoint::CheckpointReader reader(path);
  for (const auto& [name, value] : whole) {
    const auto* entry = reader.Find(name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_TRUE(SameBytes(reader.Read(*entry), value)) << name;
  }
  for (const auto& [key, value] : slots) {
    const auto* entry = reader.Find(key);
    ASSERT_NE(entry, nullptr) << key;
    EXPECT_TRUE(SameBytes(reader.Read(*entry), value)) << key;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace autodist::sync
