// The four element-wise optimizers: each is ElementwiseOptimizer over its rule (rules/).
#include <memory>

#include "runtime/optim/elementwise_optimizer.h"
#include "runtime/optim/optimizers.h"
#include "runtime/optim/rules/adagrad.h"
#include "runtime/optim/rules/adam.h"
#include "runtime/optim/rules/rmsprop.h"
#include "runtime/optim/rules/sgd.h"

namespace autodist::optim::detail {

std::unique_ptr<Optimizer> MakeSgd(const OptimizerOptions& options) {
  return std::make_unique<ElementwiseOptimizer<SgdRule>>(options);
}

std::unique_ptr<Optimizer> MakeAdam(const OptimizerOptions& options) {
  return std::make_unique<ElementwiseOptimizer<AdamRule>>(options);
}

std::unique_ptr<Optimizer> MakeAdagrad(const OptimizerOptions& options) {
  return std::make_unique<ElementwiseOptimizer<AdagradRule>>(options);
}

std::unique_ptr<Optimizer> MakeRmsprop(const OptimizerOptions& options) {
  return std::make_unique<ElementwiseOptimizer<RmspropRule>>(options);
}

}  // namespace autodist::optim::detail
