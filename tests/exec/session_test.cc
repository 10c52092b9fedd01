// The Session on real exported models: forward, backward against finite differences of the
// whole graph, and the load-time and feed errors.
#include "runtime/exec/session.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::exec {
namespace {

onnx::ModelProto LoadModel(const std::string& name) {
  onnx::ModelProto model;
  const std::string bytes =
      ReadFileBytes(std::string(AUTODIST_FIXTURES_DIR) + "/models/" + name, "model");
  EXPECT_TRUE(model.ParseFromString(bytes));
  return model;
}

Feeds ImageBatch(int64_t batch, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> pixel(0.0F, 1.0F);
  Tensor image(DType::kFloat32, {batch, 1, 28, 28});
  for (int64_t i = 0; i < image.numel(); ++i) image.data<float>()[i] = pixel(engine);
  Tensor label(DType::kInt64, {batch});
  for (int64_t i = 0; i < batch; ++i)
    label.data<int64_t>()[i] = static_cast<int64_t>(engine() % 10);
  return {{"image", image}, {"label", label}};
}

template <typename Body>
std::string ErrorOf(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(SessionTest, LoadsTheMlpAndFindsLossAndVariables) {
  const Session session(LoadModel("mlp.onnx"), "mlp.onnx", {});
  EXPECT_EQ(session.loss_name(), "loss");
  EXPECT_EQ(session.trainable_names(),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                      "fc3.weight", "fc3.bias"}));
  ASSERT_EQ(session.inputs().size(), 2u);
  EXPECT_EQ(session.inputs()[0].name, "image");
  EXPECT_EQ(session.inputs()[0].shape, (std::vector<int64_t>{-1, 1, 28, 28}));
}

TEST(SessionTest, Tf32IsRefusedOnTheCpu) {
  SessionOptions options;
  options.precision = ops::Precision::kTf32;
  EXPECT_EQ(ErrorOf([&] { Session(LoadModel("mlp.onnx"), "mlp.onnx", options); }),
            "model 'mlp.onnx': precision tf32 is for GPUs; the CPU computes fp32");
}

TEST(SessionTest, MlpGradientsMatchFiniteDifferencesOfTheLoss) {
  Session session(LoadModel("mlp.onnx"), "mlp.onnx", {});
  const Feeds feeds = ImageBatch(4, 1);
  const Session::StepResult step = session.ForwardBackward(feeds);
  EXPECT_TRUE(std::isfinite(step.loss));
  ASSERT_EQ(step.gradients.size(), 6u);
  for (const auto& [name, gradient] : step.gradients) {
    EXPECT_FALSE(gradient.is_sparse()) << name;
    EXPECT_EQ(gradient.dense.shape(), session.variable(name).shape()) << name;
  }
  // Central differences on a few elements of each variable, through the whole graph.
  // Small enough that no ReLU changes side for these inputs, large enough for float32 loss.
  const float epsilon = 1e-3F;
  for (const std::string name : {"fc1.weight", "fc2.bias", "fc3.weight", "fc3.bias"}) {
    Tensor& variable = session.variable(name);
    const Tensor& gradient = step.gradients.at(name).dense;
    for (const int64_t index : {int64_t{0}, variable.numel() / 2, variable.numel() - 1}) {
      float* x = variable.data<float>();
      const float original = x[index];
      x[index] = original + epsilon;
      const double plus = session.Run(feeds, true).at("loss").GetAsDouble(0);
      x[index] = original - epsilon;
      const double minus = session.Run(feeds, true).at("loss").GetAsDouble(0);
      x[index] = original;
      const double numeric = (plus - minus) / (2.0 * epsilon);
      EXPECT_NEAR(gradient.data<float>()[index], numeric, 2e-3 + 2e-2 * std::abs(numeric))
          << name << "[" << index << "]";
    }
  }
}

// Gradients are handed out as backward finishes them: the last layer's first, each exactly once,
// each the same tensor the step returns.
TEST(SessionTest, GradientsAreReportedAsSoonAsBackwardFinishesThem) {
  Session session(LoadModel("mlp.onnx"), "mlp.onnx", {});
  std::vector<std::string> order;
  std::vector<const Gradient*> seen;
  const Session::StepResult step =
      session.ForwardBackward(ImageBatch(4, 3), [&](const std::string& name, const Gradient& g) {
        order.push_back(name);
        seen.push_back(&g);
      });
  ASSERT_EQ(order.size(), step.gradients.size());
  EXPECT_EQ(order.front().substr(0, 3), "fc3");
  EXPECT_EQ(order.back().substr(0, 3), "fc1");
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(seen[i], &step.gradients.at(order[i])) << order[i];
  }
  // The same values as a step without the callback.
  const Session::StepResult plain = session.ForwardBackward(ImageBatch(4, 3));
  for (const auto& [name, gradient] : plain.gradients) {
    const Tensor& other = step.gradients.at(name).dense;
    for (int64_t i = 0; i < other.numel(); ++i) {
      ASSERT_EQ(other.data<float>()[i], gradient.dense.data<float>()[i]) << name;
    }
  }
}

TEST(SessionTest, RunReturnsEveryOutputAndHonoursFetch) {
  Session session(LoadModel("mlp.onnx"), "mlp.onnx", {});
  const auto outputs = session.Run(ImageBatch(3, 2), false);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs.at("logits").shape(), (Shape{3, 10}));
  EXPECT_EQ(session.Run(ImageBatch(3, 2), false, {"logits"}).size(), 1u);
}

TEST(SessionTest, FeedErrorsNameTheInputAndShapes) {
  Session session(LoadModel("mlp.onnx"), "mlp.onnx", {});
  Feeds feeds = ImageBatch(2, 3);
  feeds["image"] = Tensor(DType::kFloat32, {2, 784});
  std::string message = ErrorOf([&] { session.Run(feeds, false); });
  EXPECT_NE(message.find("input 'image' expects float32 [?, 1, 28, 28]"), std::string::npos)
      << message;
  EXPECT_NE(message.find("[2, 784]"), std::string::npos) << message;
  feeds = ImageBatch(2, 3);
  feeds.erase("label");
  message = ErrorOf([&] { session.Run(feeds, false); });
  EXPECT_NE(message.find("input 'label'"), std::string::npos) << message;
  feeds = ImageBatch(2, 3);
  feeds["extra"] = Tensor::Scalar(1);
  message = ErrorOf([&] { session.Run(feeds, false); });
  EXPECT_NE(message.find("'extra' is not an input"), std::string::npos) << message;
}

TEST(SessionTest, UnsupportedOpFailsAtLoadNamingOpNodeAndOpset) {
  const std::string message =
      ErrorOf([&] { Session(LoadModel("control_flow.onnx"), "control_flow.onnx", {}); });
  EXPECT_NE(message.find("unsupported op type"), std::string::npos) << message;
  EXPECT_NE(message.find("opset"), std::string::npos) << message;
}

TEST(SessionTest, GraphWithoutAScalarLossIsAnError) {
  onnx::ModelProto model = LoadModel("mlp.onnx");
  auto* outputs = model.mutable_graph()->mutable_output();
  for (int i = 0; i < outputs->size(); ++i) {
    if (outputs->Get(i).name() == "loss") outputs->DeleteSubrange(i, 1);
  }
  const std::string message = ErrorOf([&] { Session(model, "no_loss.onnx", {}); });
  EXPECT_NE(message.find("cannot tell the loss"), std::string::npos) << message;
  EXPECT_NE(message.find("'logits'"), std::string::npos) << message;
}

TEST(SessionTest, UnknownLossNameIsAnError) {
  SessionOptions options;
  options.loss = "nope";
  const std::string message = ErrorOf([&] { Session(LoadModel("mlp.onnx"), "mlp.onnx", options); });
  EXPECT_NE(message.find("the loss 'nope'"), std::string::npos) << message;
  EXPECT_NE(message.find("'logits'"), std::string::npos) << message;
}

}  // namespace
}  // namespace autodist::exec
