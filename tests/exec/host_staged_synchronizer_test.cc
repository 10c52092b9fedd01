// Host staging (GPU replicas under a synchronizer that works in host memory), run on the CPU:
// the inner synchronizer only ever sees the mirror sessions, hears every gradient backward hands
// out, and a run through the staging trains exactly as the same run without it, BatchNorm's state,
// evaluation and export included. On a GPU the same path adds the copies (tests/gpu).
#include "runtime/exec/host_staged_synchronizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/exec/local_synchronizer.h"
#include "runtime/exec/trainer.h"
#include "tests/exec/trainer_test_util.h"
#include "tests/tensor/host_backed_memory.h"

namespace autodist::exec {
namespace {

using ::testing::HasSubstr;

onnx::ModelProto LoadModel(const std::string& path) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(ReadFileBytes(path, "model")));
  return model;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/host_staged_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The CNN (Conv, BatchNorm's replica-local state, MaxPool) in two replicas of one process,
// evaluated and exported at the end.
TrainerOptions TwoReplicaCnn(const std::string& export_path) {
  TrainerOptions options = testing::ImageModelOptions("cnn");
  options.local_replicas = 2;
  options.world_size = 2;
  options.batch_size = 8;
  options.steps = 8;
  options.export_path = export_path;
  return options;
}

// The local synchronizer, overlapping backward and checking what it is handed: the sessions it
// works on are the staging's mirrors, every gradient of the last replica was handed out during
// backward, and the earlier replica's were complete by then.
class ProbeSynchronizer final : public StepSynchronizer {
 public:
  ProbeSynchronizer(const TrainerOptions& options, const HostStagedSynchronizer* staged)
      : local_(options.optimizer, options.sum_states, options.device), staged_(staged) {}

  void set_staged(const HostStagedSynchronizer* staged) { staged_ = staged; }

  ResumePoint Start(const std::vector<Session*>& replicas, ResumePoint start,
                    const std::map<std::string, Tensor>& optimizer_state) override {
    ExpectMirrors(replicas);
    return local_.Start(replicas, start, optimizer_state);
  }
  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, Gradient>>& gradients,
                   const std::vector<Session*>& replicas) override {
    ExpectMirrors(replicas);
    std::set<std::string> names;
    for (const auto& [name, gradient] : gradients.back()) names.insert(name);
    EXPECT_EQ(ready_[step], names) << "step " << step;
    ++synchronized_;
    local_.Synchronize(step, lr, gradients, replicas);
  }
  TrainingState CurrentState(const std::vector<Session*>& replicas) override {
    ExpectMirrors(replicas);
    return local_.CurrentState(replicas);
  }
  std::map<std::string, Tensor> ReduceStates(const std::string& round,
                                             const std::vector<Session*>& replicas) override {
    ExpectMirrors(replicas);
    ++reductions_;
    return local_.ReduceStates(round, replicas);
  }
  bool overlaps_backward() const override { return true; }
  void GradientReady(int64_t step, int replica, const std::string& variable,
                     const Gradient& gradient,
                     const std::vector<std::map<std::string, Gradient>>& earlier) override {
    EXPECT_EQ(replica, 1);
    ASSERT_EQ(earlier.size(), 1U);
    EXPECT_TRUE(earlier[0].contains(variable)) << variable;
    EXPECT_EQ(gradient.dense.device(), tensor::Device::Cpu());
    EXPECT_TRUE(ready_[step].insert(variable).second) << variable << " handed out twice";
  }

  int synchronized() const { return synchronized_; }
  int reductions() const { return reductions_; }

 private:
  void ExpectMirrors(const std::vector<Session*>& replicas) const {
    ASSERT_NE(staged_, nullptr);
    EXPECT_EQ(replicas, staged_->mirrors());
  }

  LocalSynchronizer local_;
  const HostStagedSynchronizer* staged_;
  std::map<int64_t, std::set<std::string>> ready_;
  int synchronized_ = 0;
  int reductions_ = 0;
};

TEST(HostStagedSynchronizerTest, TrainsExactlyAsWithoutStaging) {
  const std::string dir = FreshDir("parity");
  const TrainerOptions direct_options = TwoReplicaCnn(dir + "/direct.onnx");
  const TrainResult direct = Train(direct_options, [](const std::string&) {});

  const TrainerOptions staged_options = TwoReplicaCnn(dir + "/staged.onnx");
  ProbeSynchronizer probe(staged_options, nullptr);
  HostStagedSynchronizer staged(probe, LoadModel(staged_options.model), staged_options.model,
                                staged_options.loss, staged_options.local_replicas,
                                staged_options.device.kind);
  probe.set_staged(&staged);
  const TrainResult through = Train(staged_options, staged, [](const std::string&) {});

  EXPECT_EQ(probe.synchronized(), 8);
  EXPECT_GE(probe.reductions(), 2);  // evaluation and export reduce BatchNorm's state
  EXPECT_EQ(through.last_loss, direct.last_loss);
  ASSERT_TRUE(through.eval.has_value() && direct.eval.has_value());
  EXPECT_EQ(through.eval->loss, direct.eval->loss);
  EXPECT_EQ(through.eval->accuracy, direct.eval->accuracy);
  const onnx::ModelProto a = LoadModel(direct_options.export_path);
  const onnx::ModelProto b = LoadModel(staged_options.export_path);
  ASSERT_EQ(a.graph().initializer_size(), b.graph().initializer_size());
  for (int i = 0; i < a.graph().initializer_size(); ++i) {
    EXPECT_EQ(a.graph().initializer(i).raw_data(), b.graph().initializer(i).raw_data())
        << a.graph().initializer(i).name();
  }
}

// For replicas on a device, the mirrors' values and the staged gradients live in that kind's host
// staging memory (pinned for CUDA; here a stand-in that counts what it lends), with the values
// they would have had.
TEST(HostStagedSynchronizerTest, MirrorsAndStagedGradientsOfDeviceReplicasLiveInStagingMemory) {
  if (tensor::HasMemory(tensor::DeviceKind::kCuda)) GTEST_SKIP() << "a CUDA backend is linked";
  tensor::testing::StagingMemory memory;
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, &memory);
  const TrainerOptions options = TwoReplicaCnn("");
  LocalSynchronizer local(options.optimizer, options.sum_states, options.device);
  const onnx::ModelProto model = LoadModel(options.model);
  Session reference(model, options.model, SessionOptions{});
  {
    HostStagedSynchronizer staged(local, model, options.model, options.loss, 2,
                                  tensor::DeviceKind::kCuda);
    const auto lent = [&](const Tensor& value) {
      return std::find(memory.lent.begin(), memory.lent.end(), value.raw()) != memory.lent.end();
    };
    size_t values = 0;
    for (Session* mirror : staged.mirrors()) {
      for (const std::string& name : mirror->trainable_names()) {
        const Tensor& value = mirror->variable(name);
        EXPECT_TRUE(lent(value)) << name << " is not in staging memory";
        EXPECT_EQ(value.device(), tensor::Device::Cpu()) << name;
        EXPECT_EQ(std::memcmp(value.raw(), reference.variable(name).raw(), value.nbytes()), 0)
            << name;
        ++values;
      }
      for (const std::string& name : mirror->state_names()) {
        EXPECT_TRUE(lent(mirror->state(name))) << name << " is not in staging memory";
        ++values;
      }
    }
    EXPECT_EQ(memory.lent.size(), values);

    Gradient on_device;
    on_device.dense = Tensor::FromVector<float>({2, 2}, {1, -2, 3, -4}).To(tensor::Device::Cuda(0));
    const Gradient host = GradientOnHost(on_device, tensor::DeviceKind::kCuda);
    EXPECT_EQ(host.dense.device(), tensor::Device::Cpu());
    EXPECT_TRUE(lent(host.dense));
    EXPECT_EQ(host.dense.data<float>()[3], -4.0F);
  }
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, nullptr);
}

// An inner synchronizer that takes one variable's gradients where backward left them (a push it
// compresses on the device) and records what it is handed.
class DeviceTakingProbe final : public StepSynchronizer {
 public:
  explicit DeviceTakingProbe(std::string taken) : taken_(std::move(taken)) {}

  ResumePoint Start(const std::vector<Session*>& /*replicas*/, ResumePoint start,
                    const std::map<std::string, Tensor>& /*optimizer_state*/) override {
    return start;
  }
  void Synchronize(int64_t /*step*/, double /*lr*/,
                   const std::vector<std::map<std::string, Gradient>>& gradients,
                   const std::vector<Session*>& /*replicas*/) override {
    handed = gradients;
  }
  TrainingState CurrentState(const std::vector<Session*>& /*replicas*/) override { return {}; }
  CheckpointState StateForCheckpoint(const std::vector<Session*>& /*replicas*/,
                                     const std::string& /*checkpoint_path*/) override {
    return {};
  }
  std::map<std::string, Tensor> ReduceStates(const std::string& /*round*/,
                                             const std::vector<Session*>& /*replicas*/) override {
    return {};
  }
  bool overlaps_backward() const override { return true; }
  void GradientReady(int64_t /*step*/, int /*replica*/, const std::string& variable,
                     const Gradient& gradient,
                     const std::vector<std::map<std::string, Gradient>>& /*earlier*/) override {
    ready_devices[variable] = gradient.dense.device();
  }
  bool works_on_host() const override { return true; }
  bool TakesOnDevice(const std::string& variable) const override { return variable == taken_; }

  std::vector<std::map<std::string, Gradient>> handed;
  std::map<std::string, tensor::Device> ready_devices;

 private:
  std::string taken_;
};

// What the inner synchronizer takes on the device crosses uncopied (the same storage, still on
// the device); every other gradient is staged to the host as before, whether it was handed out
// during backward or only at the step's end.
TEST(HostStagedSynchronizerTest, GradientsTheInnerTakesOnTheDeviceAreNotCopied) {
  if (tensor::HasMemory(tensor::DeviceKind::kCuda)) GTEST_SKIP() << "a CUDA backend is linked";
  tensor::testing::StagingMemory memory;
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, &memory);
  {
    const TrainerOptions options = TwoReplicaCnn("");
    const onnx::ModelProto model = LoadModel(options.model);
    Session first(model, options.model, SessionOptions{});
    Session second(model, options.model, SessionOptions{});
    const std::vector<std::string> names = first.trainable_names();
    ASSERT_GE(names.size(), 2U);
    const std::string& taken = names[0];
    const std::string& staged_name = names[1];
    DeviceTakingProbe probe(taken);
    HostStagedSynchronizer staged(probe, model, options.model, options.loss, 2,
                                  tensor::DeviceKind::kCuda);
    const auto on_device = [](float value) {
      Gradient gradient;
      gradient.dense = Tensor::FromVector<float>({2}, {value, -value}).To(tensor::Device::Cuda(0));
      return gradient;
    };
    std::vector<std::map<std::string, Gradient>> gradients(2);
    for (int r = 0; r < 2; ++r) {
      gradients[r][taken] = on_device(1.0F + static_cast<float>(r));
      gradients[r][staged_name] = on_device(3.0F + static_cast<float>(r));
    }
    const std::vector<Session*> replicas{&first, &second};
    for (const bool during_backward : {true, false}) {
      const int64_t step = during_backward ? 0 : 1;
      if (during_backward) {
        for (const auto& [name, gradient] : gradients[1]) {
          staged.GradientReady(step, 1, name, gradient, {gradients[0]});
        }
        EXPECT_EQ(probe.ready_devices.at(taken), tensor::Device::Cuda(0));
        EXPECT_EQ(probe.ready_devices.at(staged_name), tensor::Device::Cpu());
      }
      staged.Synchronize(step, 0.1, gradients, replicas);
      ASSERT_EQ(probe.handed.size(), 2U);
      for (size_t r = 0; r < 2; ++r) {
        const Tensor& kept = probe.handed[r].at(taken).dense;
        EXPECT_EQ(kept.device(), tensor::Device::Cuda(0)) << "replica " << r;
        EXPECT_TRUE(kept.SharesStorageWith(gradients[r].at(taken).dense)) << "replica " << r;
        const Tensor& copied = probe.handed[r].at(staged_name).dense;
        EXPECT_EQ(copied.device(), tensor::Device::Cpu()) << "replica " << r;
        EXPECT_EQ(copied.data<float>()[1], -(3.0F + static_cast<float>(r))) << "replica " << r;
      }
    }
  }
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, nullptr);
}

TEST(HostStagedSynchronizerTest, MirrorsAreTheHostsOwnSessions) {
  const TrainerOptions options = TwoReplicaCnn("");
  LocalSynchronizer local(options.optimizer, options.sum_states, options.device);
  const onnx::ModelProto model = LoadModel(options.model);
  HostStagedSynchronizer staged(local, model, options.model, options.loss, 2,
                                tensor::DeviceKind::kCpu);
  ASSERT_EQ(staged.mirrors().size(), 2U);
  EXPECT_NE(staged.mirrors()[0], staged.mirrors()[1]);
  for (Session* mirror : staged.mirrors()) {
    for (const std::string& name : mirror->trainable_names()) {
      EXPECT_EQ(mirror->variable(name).device(), tensor::Device::Cpu()) << name;
    }
  }
  // Two mirrors are not three replicas: the step is refused, naming both counts.
  TrainerOptions three = options;
  three.local_replicas = 3;
  three.world_size = 3;
  try {
    Train(three, staged, [](const std::string&) {});
    ADD_FAILURE() << "three replicas trained through two mirrors";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInternal);
    EXPECT_THAT(error.what(), HasSubstr("host staging mirrors 2 replicas, the step has 3"));
  }
}

}  // namespace
}  // namespace autodist::exec
