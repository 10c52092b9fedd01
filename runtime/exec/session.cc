#include "runtime/exec/session.h"

#include <onnx/onnx_pb.h>

#include "runtime/common/error.h"
#include "runtime/observe/timeline.h"

namespace autodist::exec {

// The plan, and what training changes: the stored values (variables, state, constants by value
// id) and the random engine.
struct Session::Impl {
  ExecutionPlan plan;
  std::vector<Tensor> stored;
  std::mt19937_64 rng;

  Executor executor() { return {plan, stored, rng}; }
  Tensor& Stored(const std::string& name, ValueKind kind, const char* what);
};

namespace {

// The session's device becomes the thread's: replicas of one process may sit on several GPUs.
void SelectDevice(const tensor::Device& device) {
  if (!device.is_cpu()) tensor::MemoryOf(device).Select(device);
}

}  // namespace

Tensor& Session::Impl::Stored(const std::string& name, ValueKind kind, const char* what) {
  const auto it = plan.value_ids.find(name);
  AD_CHECK(it != plan.value_ids.end() && plan.values[static_cast<size_t>(it->second)].kind == kind,
           kNotFound, "model '{}': no {} '{}'", plan.source, what, name);
  return stored[static_cast<size_t>(it->second)];
}

Session::Session(const onnx::ModelProto& model, const std::string& source,
                 const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->plan = PlanExecution(model, source, options.loss, impl_->stored, options.device,
                              options.precision, options.fuse_activations);
  for (Tensor& value : impl_->stored) value = value.To(options.device);
  impl_->rng.seed(options.seed);
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::map<std::string, Tensor> Session::Run(const Feeds& feeds, bool training,
                                           const std::vector<std::string>& fetch) {
  const ExecutionPlan& plan = impl_->plan;
  SelectDevice(plan.device);
  std::vector<Tensor> live = impl_->executor().Forward(feeds, training, nullptr);
  std::map<std::string, Tensor> out;
  if (fetch.empty()) {
    for (const int id : plan.output_ids)
      out[plan.values[static_cast<size_t>(id)].name] = live[static_cast<size_t>(id)];
    return out;
  }
  for (const std::string& name : fetch) {
    const auto it = plan.value_ids.find(name);
    AD_CHECK(it != plan.value_ids.end() && live[static_cast<size_t>(it->second)].defined(),
             kInvalidArgument, "model '{}': cannot fetch '{}': not a graph output", plan.source,
             name);
    out[name] = live[static_cast<size_t>(it->second)];
  }
  return out;
}

Session::StepResult Session::ForwardBackward(const Feeds& feeds, const GradientReadyFn& on_ready) {
  const ExecutionPlan& plan = impl_->plan;
  SelectDevice(plan.device);
  Executor executor = impl_->executor();
  KernelStates kernel_states(plan.nodes.size());
  std::vector<Tensor> live;
  {
    // On a GPU these spans are the time to enqueue the kernels, not to run them.
    const observe::Span span("compute", "forward");
    live = executor.Forward(feeds, true, &kernel_states);
  }
  StepResult result;
  for (const int id : plan.output_ids) {
    result.outputs[plan.values[static_cast<size_t>(id)].name] = live[static_cast<size_t>(id)];
  }
  {
    const observe::Span span("compute", "backward");
    result.gradients = executor.Backward(live, kernel_states, on_ready);
  }
  result.loss = static_cast<float>(
      live[static_cast<size_t>(plan.loss_id)].To(tensor::Device::Cpu()).GetAsDouble(0));
  return result;
}

const std::vector<InputSpec>& Session::inputs() const { return impl_->plan.inputs; }
const std::string& Session::loss_name() const {
  return impl_->plan.values[static_cast<size_t>(impl_->plan.loss_id)].name;
}
const std::vector<std::string>& Session::output_names() const { return impl_->plan.output_names; }
const std::vector<std::string>& Session::trainable_names() const { return impl_->plan.trainable; }
const std::vector<std::string>& Session::state_names() const { return impl_->plan.states; }

Tensor& Session::variable(const std::string& name) {
  return impl_->Stored(name, ValueKind::kVariable, "trainable variable");
}

Tensor& Session::state(const std::string& name) {
  return impl_->Stored(name, ValueKind::kState, "state variable");
}

std::mt19937_64& Session::rng() { return impl_->rng; }

}  // namespace autodist::exec
