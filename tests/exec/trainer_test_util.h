// What the trainer tests share (tests/exec and, on a GPU, tests/gpu): the PyTorch parity
// fixtures' MLP with its data.
#pragma once

#include <string>

#include "runtime/exec/trainer.h"
#include "runtime/optim/optimizer_options.h"

namespace autodist::exec::testing {

inline const std::string kParity = std::string(AUTODIST_FIXTURES_DIR) + "/parity/";

// The parity MLP trained on its own data (evaluated on it too): batch 32 (10 batches an epoch),
// seed 7, SGD with momentum. The caller sets the steps.
inline TrainerOptions MlpOptions() {
  TrainerOptions options;
  options.model = kParity + "mlp/model.onnx";
  options.train_files = {{"image", kParity + "mlp/image.npy"},
                         {"label", kParity + "mlp/label.npy"}};
  options.eval_files = options.train_files;
  options.batch_size = 32;
  options.eval_batch_size = 100;
  options.seed = 7;
  options.optimizer = optim::ParseOptimizerOptions("sgd", {{"lr", "0.05"}, {"momentum", "0.9"}});
  options.log_every = 1000;
  return options;
}

// The same for another parity model on images: "cnn" (Conv, BatchNorm, MaxPool) or "resnet".
inline TrainerOptions ImageModelOptions(const std::string& model) {
  TrainerOptions options = MlpOptions();
  options.model = kParity + model + "/model.onnx";
  options.train_files = {{"image", kParity + model + "/image.npy"},
                         {"label", kParity + model + "/label.npy"}};
  options.eval_files = options.train_files;
  return options;
}

}  // namespace autodist::exec::testing
