#include "runtime/ops/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <cstring>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::ops {
namespace {

template <typename T, typename Field>
void CopyField(const Field& field, tensor::Tensor& out, const std::string& what) {
  AD_CHECK(static_cast<int64_t>(field.size()) == out.numel(), kInvalidArgument,
           "{}: holds {} values but its shape {} needs {}", what, field.size(),
           tensor::ShapeToString(out.shape()), out.numel());
  T* data = out.data<T>();
  for (int i = 0; i < field.size(); ++i) data[i] = static_cast<T>(field.Get(i));
}

// A tensor of the proto's type and dims, data not yet filled in; `prefaulted` for one about to be
// overwritten whole from a file (its pages mapped in at once, not one fault per page).
tensor::Tensor EmptyTensorFor(const onnx::TensorProto& proto, const std::string& what,
                              bool prefaulted = false) {
  tensor::Shape shape(proto.dims().begin(), proto.dims().end());
  for (const int64_t dim : shape) {
    AD_CHECK(dim >= 0, kInvalidArgument, "{}: negative dimension in {}", what,
             tensor::ShapeToString(shape));
  }
  const tensor::DType dtype = tensor::DTypeFromOnnx(proto.data_type(), what);
  return prefaulted ? tensor::Tensor::Prefaulted(dtype, shape) : tensor::Tensor(dtype, shape);
}

}  // namespace

tensor::Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& what) {
  AD_CHECK(proto.data_location() != onnx::TensorProto::EXTERNAL, kInvalidArgument,
           "{}: its data is external, and the model's directory is not known here", what);
  tensor::Tensor out = EmptyTensorFor(proto, what);
  const tensor::DType dtype = out.dtype();
  const tensor::Shape& shape = out.shape();
  if (!proto.raw_data().empty()) {
    AD_CHECK(proto.raw_data().size() == out.nbytes(), kInvalidArgument,
             "{}: raw data has {} bytes but shape {} of {} needs {}", what, proto.raw_data().size(),
             tensor::ShapeToString(shape), tensor::DTypeName(dtype), out.nbytes());
    std::memcpy(out.raw(), proto.raw_data().data(), out.nbytes());  // x86/ARM are little-endian
    return out;
  }
  switch (dtype) {
    case tensor::DType::kFloat32:
      CopyField<float>(proto.float_data(), out, what);
      break;
    case tensor::DType::kFloat64:
      CopyField<double>(proto.double_data(), out, what);
      break;
    case tensor::DType::kInt64:
      CopyField<int64_t>(proto.int64_data(), out, what);
      break;
    case tensor::DType::kInt32:
      CopyField<int32_t>(proto.int32_data(), out, what);
      break;
    case tensor::DType::kUInt8:
      CopyField<uint8_t>(proto.int32_data(), out, what);
      break;
    case tensor::DType::kInt8:
      CopyField<int8_t>(proto.int32_data(), out, what);
      break;
    case tensor::DType::kBool:
      CopyField<bool>(proto.int32_data(), out, what);
      break;
    case tensor::DType::kUndefined:
      Fail(ErrorCode::kInternal, "{}: undefined dtype", what);
  }
  return out;
}

tensor::Tensor TensorFromExternalData(const onnx::TensorProto& proto, const std::string& path,
                                      int64_t offset, int64_t length, const std::string& what) {
  tensor::Tensor out = EmptyTensorFor(proto, what, /*prefaulted=*/true);
  AD_CHECK(length == static_cast<int64_t>(out.nbytes()), kInvalidArgument,
           "{}: its external data in '{}' is {} bytes; shape {} of {} needs {}", what, path, length,
           tensor::ShapeToString(out.shape()), tensor::DTypeName(out.dtype()), out.nbytes());
  ReadFileRange(path, offset, out.raw(), out.nbytes(), what);  // little-endian, as in raw_data
  return out;
}

void TensorToProto(const tensor::Tensor& value, const std::string& name, onnx::TensorProto& proto) {
  proto.Clear();
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(value.dtype()));
  for (const int64_t dim : value.shape()) proto.add_dims(dim);
  proto.set_raw_data(value.raw(), value.nbytes());
}

}  // namespace autodist::ops
