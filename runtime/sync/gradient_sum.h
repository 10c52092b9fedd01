// Gradients of several in-graph replicas combined into one, for the synchronizers: the servers
// and the collectives work with sums, and the mean is taken once at the end (sum, then times
// 1/n, as the single-process step does).
#pragma once

#include <vector>

#include "runtime/exec/session.h"

namespace autodist::sync {

// The sum of several replicas' gradients of one variable, added in replica order (row-sparse
// gradients merged, rows with the same index summed). Throws Internal when they are not all of
// one kind and shape.
exec::Gradient SumGradients(const std::vector<const exec::Gradient*>& parts);

// Multiplies every element (dense values, or the rows of a sparse gradient) by `factor`.
void ScaleGradient(exec::Gradient& gradient, float factor);

}  // namespace autodist::sync
