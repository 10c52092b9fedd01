// The training loop: resume continues bit-identically, export round-trips, divergence is
// reported with the step and the variable, evaluation reports accuracy.
#include "runtime/exec/trainer.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/observe/event_file.h"
#include "tests/exec/trainer_test_util.h"

namespace autodist::exec {
namespace {

using testing::kParity;
using testing::MlpOptions;

// A fresh empty directory under the test's temporary folder.
std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/trainer_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(TrainerTest, ResumedRunContinuesBitIdentically) {
  const std::string dir = FreshDir("resume");
  std::vector<std::string> lines;
  const LineSink sink = [&](const std::string& line) { lines.push_back(line); };

  // One run of 15 steps (10 batches an epoch: crosses an epoch boundary), exported.
  TrainerOptions straight = MlpOptions();
  straight.steps = 15;
  straight.export_path = dir + "/straight.onnx";
  Train(straight, sink);

  // The same run stopped at step 6 with a checkpoint, then resumed to 15.
  TrainerOptions first = MlpOptions();
  first.steps = 6;
  first.checkpoint_dir = dir + "/checkpoints";
  Train(first, sink);
  ASSERT_TRUE(checkpoint::LatestCheckpoint(first.checkpoint_dir).has_value());
  TrainerOptions second = MlpOptions();
  second.steps = 15;
  second.checkpoint_dir = first.checkpoint_dir;
  second.resume = true;
  second.export_path = dir + "/resumed.onnx";
  const TrainResult resumed = Train(second, sink);
  EXPECT_EQ(resumed.resumed_from_step, 6);
  EXPECT_EQ(resumed.steps, 15);

  onnx::ModelProto a;
  onnx::ModelProto b;
  ASSERT_TRUE(a.ParseFromString(ReadFileBytes(straight.export_path, "model")));
  ASSERT_TRUE(b.ParseFromString(ReadFileBytes(second.export_path, "model")));
  ASSERT_EQ(a.graph().initializer_size(), b.graph().initializer_size());
  for (int i = 0; i < a.graph().initializer_size(); ++i) {
    EXPECT_EQ(a.graph().initializer(i).raw_data(), b.graph().initializer(i).raw_data())
        << a.graph().initializer(i).name();
  }
}

TEST(TrainerTest, ExportedModelTrainsFromWhereItStopped) {
  const std::string dir = FreshDir("export");
  TrainerOptions options = MlpOptions();
  options.steps = 20;
  options.export_path = dir + "/trained.onnx";
  const TrainResult trained = Train(options, [](const std::string&) {});
  ASSERT_TRUE(trained.eval.has_value());
  ASSERT_TRUE(trained.eval->accuracy.has_value());

  // Evaluating the exported model without training gives the final evaluation again.
  TrainerOptions reload = MlpOptions();
  reload.model = options.export_path;
  reload.steps = 1;
  reload.optimizer = optim::ParseOptimizerOptions("sgd", {{"lr", "0"}});
  const TrainResult again = Train(reload, [](const std::string&) {});
  ASSERT_TRUE(again.eval.has_value());
  EXPECT_NEAR(again.eval->loss, trained.eval->loss, 1e-6);
  EXPECT_EQ(again.eval->accuracy, trained.eval->accuracy);
  // 320 samples with random labels memorized a little: better than chance.
  EXPECT_GT(*trained.eval->accuracy, 0.1);
}

TEST(TrainerTest, DivergenceNamesTheStepAndVariable) {
  TrainerOptions options = MlpOptions();
  options.steps = 50;
  options.optimizer = optim::ParseOptimizerOptions("sgd", {{"lr", "1e30"}});
  try {
    Train(options, [](const std::string&) {});
    FAIL() << "expected divergence";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("step "), std::string::npos) << message;
    EXPECT_NE(message.find("diverged"), std::string::npos) << message;
    EXPECT_NE(message.find("fc"), std::string::npos) << message;
  }
}

TEST(TrainerTest, BadOptionsAreClearErrors) {
  TrainerOptions options = MlpOptions();
  EXPECT_THROW(Train(options, [](const std::string&) {}), Error);  // neither steps nor epochs
  options.steps = 1;
  options.model = "/nonexistent/model.onnx";
  EXPECT_THROW(Train(options, [](const std::string&) {}), Error);
  options = MlpOptions();
  options.steps = 1;
  options.train_files = {{"image", kParity + "mlp/image.npy"},
                         {"label", kParity + "embedding/tokens.npy"}};  // wrong dtype and shape
  EXPECT_THROW(Train(options, [](const std::string&) {}), Error);
}

TEST(TrainerTest, ProgressLinesReportStepLossAndThroughput) {
  TrainerOptions options = MlpOptions();
  options.steps = 4;
  options.log_every = 2;
  options.eval_files.clear();
  std::vector<std::string> lines;
  Train(options, [&](const std::string& line) { lines.push_back(line); });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("step 2/4"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("loss "), std::string::npos);
  EXPECT_NE(lines[0].find("samples/s "), std::string::npos);
  EXPECT_NE(lines[1].find("step 4/4"), std::string::npos) << lines[1];
}

// The scalars of the event file, by tag: (step, value) in order.
std::map<std::string, std::vector<std::pair<int64_t, double>>> ScalarsByTag(
    const std::string& dir) {
  const std::vector<std::string> files = observe::EventFilesIn(dir);
  EXPECT_EQ(files.size(), 1u) << dir;
  std::map<std::string, std::vector<std::pair<int64_t, double>>> by_tag;
  if (files.empty()) return by_tag;
  for (const observe::ScalarPoint& point : observe::ReadEventFile(files[0]).scalars) {
    by_tag[point.tag].emplace_back(point.step, point.value);
  }
  return by_tag;
}

TEST(TrainerTest, TensorBoardScalarsFollowTheProgressLinesAndEvaluations) {
  TrainerOptions options = MlpOptions();
  options.steps = 6;
  options.log_every = 2;
  options.eval_every = 3;
  options.tensorboard_dir = FreshDir("tensorboard") + "/run";
  std::vector<double> line_losses;
  std::vector<double> eval_losses;
  Train(options, [&](const std::string& line) {
    if (line.rfind("step ", 0) == 0) {
      line_losses.push_back(std::stod(line.substr(line.find("loss ") + 5)));
    } else if (line.rfind("eval ", 0) == 0) {
      eval_losses.push_back(std::stod(line.substr(line.find("loss ") + 5)));
    }
  });
  const auto scalars = ScalarsByTag(options.tensorboard_dir);
  ASSERT_EQ(scalars.count("train/loss"), 1u);
  const auto& losses = scalars.at("train/loss");
  ASSERT_EQ(losses.size(), 3u);
  ASSERT_EQ(line_losses.size(), 3u);
  for (size_t i = 0; i < losses.size(); ++i) {
    EXPECT_EQ(losses[i].first, static_cast<int64_t>(2 * (i + 1)));
    EXPECT_NEAR(losses[i].second, line_losses[i], 1e-4);  // the line prints 4 decimals
  }
  const auto& lr = scalars.at("train/learning_rate");
  ASSERT_EQ(lr.size(), 3u);
  EXPECT_FLOAT_EQ(static_cast<float>(lr[0].second), 0.05F);
  for (const char* tag : {"perf/samples_per_second", "perf/step_seconds"}) {
    ASSERT_EQ(scalars.count(tag), 1u) << tag;
    ASSERT_EQ(scalars.at(tag).size(), 3u) << tag;
    for (const auto& [step, value] : scalars.at(tag)) EXPECT_GT(value, 0) << tag << " " << step;
  }
  // One process: nothing on the wire, so no wire/* tags.
  for (const auto& [tag, points] : scalars) EXPECT_NE(tag.rfind("wire/", 0), 0u) << tag;
  // Evaluations after steps 3 and 6 (the end).
  const auto& eval_loss = scalars.at("eval/loss");
  ASSERT_EQ(eval_loss.size(), 2u);
  ASSERT_EQ(eval_losses.size(), 2u);
  EXPECT_EQ(eval_loss[0].first, 3);
  EXPECT_EQ(eval_loss[1].first, 6);
  EXPECT_NEAR(eval_loss[1].second, eval_losses[1], 1e-4);
  const auto& accuracy = scalars.at("eval/accuracy");
  ASSERT_EQ(accuracy.size(), 2u);
  EXPECT_GE(accuracy[1].second, 0.0);
  EXPECT_LE(accuracy[1].second, 1.0);
}

}  // namespace
}  // namespace autodist::exec

namespace autodist::exec {
namespace {

// The variables of the checkpoint written at the end of a run with `options`.
std::map<std::string, std::vector<float>> FinalVariables(TrainerOptions options,
                                                         const std::string& dir) {
  options.checkpoint_dir = dir;
  Train(options, [](const std::string&) {});
  const checkpoint::CheckpointReader checkpoint(*checkpoint::LatestCheckpoint(dir));
  std::map<std::string, std::vector<float>> values;
  for (const auto& entry : checkpoint.variables()) {
    const tensor::Tensor t = checkpoint.Read(entry);
    values[entry.name] = std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  }
  return values;
}

// The correctness contract of data parallelism, in one process: R replicas with batch b take the
// same steps as one replica with batch R*b over the same samples.
void ExpectReplicasMatchOneBigBatch(TrainerOptions options, const std::string& name) {
  options.steps = 6;
  options.shuffle = true;
  options.eval_files.clear();
  TrainerOptions big = options;
  big.batch_size = options.batch_size * 4;
  TrainerOptions replicated = options;
  replicated.local_replicas = 4;
  replicated.world_size = 4;
  const auto expected = FinalVariables(big, FreshDir(name + "_big"));
  const auto got = FinalVariables(replicated, FreshDir(name + "_replicated"));
  ASSERT_EQ(expected.size(), got.size());
  for (const auto& [variable, values] : expected) {
    const auto& other = got.at(variable);
    ASSERT_EQ(values.size(), other.size()) << variable;
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_NEAR(other[i], values[i], 1e-5 * std::max(1.0F, std::abs(values[i])))
          << variable << "[" << i << "]";
    }
  }
}

TEST(TrainerTest, LocalReplicasMatchOneProcessWithTheGlobalBatch) {
  TrainerOptions options = MlpOptions();
  options.batch_size = 8;
  ExpectReplicasMatchOneBigBatch(options, "replicas_mlp");
}

TEST(TrainerTest, LocalReplicasWithSparseGradientsMatchTheGlobalBatch) {
  TrainerOptions options;
  options.model = kParity + "embedding/model.onnx";
  options.train_files = {{"tokens", kParity + "embedding/tokens.npy"},
                         {"label", kParity + "embedding/label.npy"}};
  options.batch_size = 8;
  options.seed = 3;
  // SGD with momentum rather than Adam: Adam divides by sqrt(v), which turns the rounding noise
  // of rows with near-zero gradients into visible steps, so the two summation orders (mean of
  // replica means vs one big mean) could not be compared at 1e-5.
  options.optimizer = optim::ParseOptimizerOptions("sgd", {{"lr", "0.5"}, {"momentum", "0.9"}});
  ExpectReplicasMatchOneBigBatch(options, "replicas_embedding");
}

TEST(TrainerTest, ReplicasMustFitTheWorld) {
  TrainerOptions options = MlpOptions();
  options.steps = 1;
  options.local_replicas = 2;
  options.world_size = 1;
  try {
    Train(options, [](const std::string&) {});
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("do not fit in a world of 1"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace autodist::exec
