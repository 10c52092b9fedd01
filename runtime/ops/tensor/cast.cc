// Cast: converts to the element type `to` (float32, float64, int64, int32, uint8, int8, bool).
// Conversions follow C++/PyTorch: float to integer truncates toward zero (to int8/uint8 through
// int64, wrapping as PyTorch does), anything to bool is "!= 0". A gradient flows only between
// float types: the output gradient cast back to the input's type.
#include <type_traits>

#include "runtime/common/error.h"
#include "runtime/ops/parallel.h"
#include "runtime/ops/registry.h"
#include "runtime/ops/tensor/layout.h"

namespace autodist::ops {
namespace {

bool IsFloat(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }

// Calls fn(T{}) with the C++ type of `dtype`.
template <typename Fn>
void VisitDType(DType dtype, const std::string& node, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
    case DType::kInt64:
      return fn(int64_t{});
    case DType::kInt32:
      return fn(int32_t{});
    case DType::kUInt8:
      return fn(uint8_t{});
    case DType::kInt8:
      return fn(int8_t{});
    case DType::kBool:
      return fn(bool{});
    case DType::kUndefined:
      break;
  }
  Fail(ErrorCode::kInvalidArgument, "{}: cannot cast a tensor of type {}", node,
       tensor::DTypeName(dtype));
}

template <typename To, typename From>
To Convert(From value) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                !std::is_same_v<To, bool> && sizeof(To) < 4) {
    // A negative float to uint8 is undefined in C++; PyTorch goes through int64 and wraps.
    return static_cast<To>(static_cast<int64_t>(value));
  } else {
    return static_cast<To>(value);
  }
}

// `x` converted to `to` (the tensor itself when it already has that type).
Tensor CastTensor(const Tensor& x, DType to, const std::string& node) {
  if (x.dtype() == to) return x;
  Tensor y(to, x.shape());
  VisitDType(x.dtype(), node, [&](auto from_tag) {
    using From = decltype(from_tag);
    VisitDType(to, node, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* in = x.data<From>();
      To* out = y.data<To>();
      ParallelFor(x.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = Convert<To>(in[i]);
      });
    });
  });
  return y;
}

struct CastState final : KernelState {
  explicit CastState(DType input) : input_dtype(input) {}
  DType input_dtype;
};

class CastKernel final : public OpKernel {
 public:
  explicit CastKernel(const NodeInfo& node) : OpKernel(node), to_(ParseTo(node)) {}

  void Forward(ForwardContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ctx.save_state(std::make_unique<CastState>(x.dtype()));
    ctx.set_output(0, CastTensor(x, to_, ctx.Describe()));
  }

  void Backward(BackwardContext& ctx) const override {
    const Tensor* dy = ctx.output_grad(0);
    if (dy == nullptr || !ctx.needs_grad(0)) return;
    const DType input_dtype = SavedState<CastState>(ctx).input_dtype;
    if (!IsFloat(input_dtype)) return;
    ctx.set_input_grad(0, CastTensor(*dy, input_dtype, ctx.Describe()));
  }

  // Integer and bool results carry no gradient.
  bool IsDifferentiable(size_t /*input*/) const override { return IsFloat(to_); }
  bool BackwardNeedsInput(size_t /*input*/) const override { return false; }
  bool BackwardNeedsOutput(size_t /*output*/) const override { return false; }

 private:
  static DType ParseTo(const NodeInfo& node) {
    AD_CHECK(node.HasAttribute("to"), kInvalidArgument, "{}: attribute 'to' is required",
             node.Describe());
    const int64_t to = node.GetInt("to", 0);
    AD_CHECK(to == static_cast<int32_t>(to), kInvalidArgument,
             "{}: attribute 'to' is {}, not an ONNX data type", node.Describe(), to);
    return tensor::DTypeFromOnnx(static_cast<int32_t>(to), node.Describe() + ": attribute 'to'");
  }

  DType to_;
};

// From opset 6 `to` is an int (before, a string).
AUTODIST_REGISTER_KERNEL(Cast, 6, 17, CastKernel);

}  // namespace
}  // namespace autodist::ops
