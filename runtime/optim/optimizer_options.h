// Optimizer options as users write them (`optimizer: {name: adam, lr: 0.001, betas: "0.9,0.999"}`
// in a manifest), parsed and validated once into typed values with PyTorch 1.13's defaults.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>

namespace autodist::optim {

// Hyper-parameters of one optimizer. Defaults are torch.optim's; where they differ per optimizer,
// ParseOptimizerOptions fills in the right one (a hand-built struct gets the values below).
//
// Numbers are doubles, as Python floats are: torch derives coefficients such as 1 - beta2 and
// lr / (1 - beta1^t) in double precision before rounding them to float32. With float fields,
// 1 - 0.999F would already be 1.3e-5 off (relative) from torch's 1 - 0.999.
struct OptimizerOptions {
  std::string name;  // "sgd" | "adam" | "adamw" | "adagrad" | "rmsprop"
  // Learning rate. Parsing: adam/adamw 1e-3, adagrad/rmsprop 1e-2; sgd has none (required, as in
  // torch.optim.SGD).
  double lr = 1e-3;
  // sgd: momentum, dampening, nesterov. rmsprop: momentum.
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
  // L2 penalty added to the gradient (adam/sgd/adagrad/rmsprop); adamw: decoupled decay
  // p *= 1 - lr * weight_decay, default 1e-2.
  double weight_decay = 0;
  // adam/adamw.
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;  // adagrad: default 1e-10
  bool amsgrad = false;
  // adagrad.
  double lr_decay = 0;
  double initial_accumulator_value = 0;
  // rmsprop.
  double alpha = 0.99;
  bool centered = false;
  // Sparse (row) gradients: false (default) gives exactly the result of the dense update on the
  // densified gradient, as PyTorch does; true updates only the rows present, leaving the others'
  // state untouched (torch.optim.SparseAdam, TensorFlow's sparse apply). See docs/training.md.
  bool lazy_sparse = false;
};

// The optimizers ParseOptimizerOptions knows, in the order error messages list them.
inline constexpr std::array<std::string_view, 5> kOptimizerNames = {"sgd", "adam", "adamw",
                                                                    "adagrad", "rmsprop"};

// Parses an optimizer name (case-insensitive: "Adam" works) and its options. Keys are snake_case
// or camelCase (weight_decay, weightDecay): lr, momentum, dampening, nesterov, weight_decay, betas
// ("0.9,0.999", optionally in brackets) or beta1/beta2, eps, amsgrad, lr_decay,
// initial_accumulator_value, alpha, centered, lazy_sparse. Booleans are true/false/1/0/yes/no.
// Throws InvalidArgument for an unknown optimizer, an option it does not take (listing the ones
// it does), a malformed value, or a value outside PyTorch's valid range.
OptimizerOptions ParseOptimizerOptions(const std::string& name,
                                       const std::map<std::string, std::string>& options);

// Checks the ranges torch.optim checks (lr >= 0, 0 <= beta < 1, nesterov needs momentum > 0 and
// dampening = 0, ...) and that every number is finite; throws InvalidArgument naming the option.
void ValidateOptimizerOptions(const OptimizerOptions& options);

// "adam(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, amsgrad=false)": the options
// that matter to this optimizer, for logs.
std::string DescribeOptimizerOptions(const OptimizerOptions& options);

}  // namespace autodist::optim
