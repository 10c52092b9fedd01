// Internal: the constructors behind MakeOptimizer (elementwise_optimizers.cc, over the rules in
// rules/). Options arrive validated.
#pragma once

#include <memory>

#include "runtime/optim/optimizer.h"

namespace autodist::optim::detail {

std::unique_ptr<Optimizer> MakeSgd(const OptimizerOptions& options);
// Adam and AdamW (decoupled weight decay) share one implementation, chosen by options.name.
std::unique_ptr<Optimizer> MakeAdam(const OptimizerOptions& options);
std::unique_ptr<Optimizer> MakeAdagrad(const OptimizerOptions& options);
std::unique_ptr<Optimizer> MakeRmsprop(const OptimizerOptions& options);

}  // namespace autodist::optim::detail
