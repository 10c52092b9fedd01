#include "runtime/tensor/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/tensor/storage.h"

namespace autodist::tensor {

int64_t NumElements(const Shape& shape) {
  int64_t count = 1;
  for (const int64_t dim : shape) count *= dim;
  return count;
}

std::string ShapeToString(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

Tensor::Tensor(DType dtype, Shape shape)
    : Tensor(dtype, std::move(shape), Pages::kAsIs, Device::Cpu()) {}

Tensor::Tensor(DType dtype, Shape shape, const Device& device)
    : Tensor(dtype, std::move(shape), Pages::kAsIs, device) {}

Tensor::Tensor(DType dtype, Shape shape, Pages pages, const Device& device)
    : dtype_(dtype), shape_(std::move(shape)), device_(device) {
  for (const int64_t dim : shape_) {
    AD_CHECK(dim >= 0, kInternal, "negative dimension in shape {}", ShapeToString(shape_));
  }
  numel_ = NumElements(shape_);
  // A device allocation is never empty, so an empty tensor still has storage to point at.
  storage_ = device.is_cpu()
                 ? AllocateStorage(nbytes(), pages)
                 : MemoryOf(device).Allocate(std::max<size_t>(nbytes(), 1), device.index);
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<std::byte[]> storage,  // NOLINT
               const Device& device)
    : dtype_(dtype),
      shape_(std::move(shape)),
      numel_(NumElements(shape_)),
      storage_(std::move(storage)),
      device_(device) {}

Tensor Tensor::HostStaging(DType dtype, Shape shape, DeviceKind near) {
  const size_t bytes = static_cast<size_t>(NumElements(shape)) * ElementSize(dtype);
  if (near != DeviceKind::kCpu && bytes > 0 && HasMemory(near)) {
    std::shared_ptr<std::byte[]> storage =  // NOLINT(*-avoid-c-arrays)
        MemoryOf(Device{near, 0}).AllocateHostStaging(bytes);
    if (storage) return {dtype, std::move(shape), std::move(storage), Device::Cpu()};
  }
  return {dtype, std::move(shape)};
}

Tensor Tensor::Prefaulted(DType dtype, Shape shape) {
  return {dtype, std::move(shape), Pages::kMapped, Device::Cpu()};
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  // Zeroed here, never assumed: a buffer from the pool holds its last user's data.
  Tensor out(dtype, std::move(shape));
  out.SetZero();
  return out;
}

Tensor Tensor::Full(Shape shape, float value) {
  Tensor out(DType::kFloat32, std::move(shape));
  auto* data = out.data<float>();
  std::fill(data, data + out.numel(), value);
  return out;
}

Tensor Tensor::Scalar(float value) { return Full({}, value); }

Tensor Tensor::Reshaped(Shape shape) const {
  AD_CHECK(NumElements(shape) == numel_, kInternal, "cannot view {} elements of shape {} as {}",
           numel_, ShapeToString(shape_), ShapeToString(shape));
  Tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

Tensor Tensor::RowsView(int64_t first, int64_t count) const {
  AD_CHECK(!shape_.empty() && first >= 0 && count >= 0 && first <= shape_[0] - count, kInternal,
           "cannot view rows [{}, {}) of a tensor of shape {}", first, first + count,
           ShapeToString(shape_));
  const size_t row_bytes = shape_[0] == 0 ? 0 : nbytes() / static_cast<size_t>(shape_[0]);
  Tensor view = *this;
  view.shape_[0] = count;
  view.numel_ = NumElements(view.shape_);
  view.offset_ += static_cast<size_t>(first) * row_bytes;
  return view;
}

Tensor Tensor::Clone() const {
  if (!defined()) return {};
  Tensor copy(dtype_, shape_, device_);
  if (nbytes() == 0) return copy;
  if (device_.is_cpu()) {
    std::memcpy(copy.raw(), raw(), nbytes());
  } else {
    MemoryOf(device_).Copy(copy.raw(), device_, raw(), device_, nbytes());
  }
  return copy;
}

Tensor Tensor::To(const Device& device) const {
  if (!defined() || device == device_) return *this;
  Tensor copy(dtype_, shape_, device);
  if (nbytes() == 0) return copy;
  // The copy goes through the memory of whichever side is not the CPU (a GPU to another GPU:
  // the destination's).
  DeviceMemory& memory = MemoryOf(device.is_cpu() ? device_ : device);
  memory.Copy(copy.raw(), device, raw(), device_, nbytes());
  return copy;
}

void Tensor::CopyFrom(const Tensor& source) {
  AD_CHECK(dtype_ == source.dtype_ && numel_ == source.numel_, kInternal,
           "copying a {} tensor of {} elements into a {} tensor of {}", DTypeName(source.dtype_),
           source.numel_, DTypeName(dtype_), numel_);
  if (nbytes() == 0 || (storage_ == source.storage_ && offset_ == source.offset_)) return;
  if (device_.is_cpu() && source.device_.is_cpu()) {
    std::memcpy(raw(), source.raw(), nbytes());
    return;
  }
  MemoryOf(device_.is_cpu() ? source.device_ : device_)
      .Copy(raw(), device_, source.raw(), source.device_, nbytes());
}

void Tensor::SetZero() {
  if (nbytes() == 0) return;
  if (device_.is_cpu()) {
    std::memset(raw(), 0, nbytes());
  } else {
    MemoryOf(device_).Zero(raw(), device_, nbytes());
  }
}

double Tensor::GetAsDouble(int64_t index) const {
  AD_CHECK(index >= 0 && index < numel_, kInternal, "element {} of a tensor of {} elements", index,
           numel_);
  switch (dtype_) {
    case DType::kFloat32:
      return data<float>()[index];
    case DType::kFloat64:
      return data<double>()[index];
    case DType::kInt64:
      return static_cast<double>(data<int64_t>()[index]);
    case DType::kInt32:
      return data<int32_t>()[index];
    case DType::kUInt8:
      return data<uint8_t>()[index];
    case DType::kInt8:
      return data<int8_t>()[index];
    case DType::kBool:
      return data<bool>()[index] ? 1.0 : 0.0;
    case DType::kUndefined:
      break;
  }
  Fail(ErrorCode::kInternal, "element access on an undefined tensor");
}

std::vector<int64_t> Tensor::ToInt64Vector(const std::string& what) const {
  AD_CHECK(dtype_ == DType::kInt64 || dtype_ == DType::kInt32, kInvalidArgument,
           "{}: expected an int64 tensor, got {}", what, DTypeName(dtype_));
  // Small integer inputs (axes, shapes) of kernels on a device: read through a host copy.
  if (!device_.is_cpu()) return To(Device::Cpu()).ToInt64Vector(what);
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) {
    out[static_cast<size_t>(i)] = dtype_ == DType::kInt64 ? data<int64_t>()[i] : data<int32_t>()[i];
  }
  return out;
}

void Tensor::CheckType(DType requested) const {
  CheckDType(requested);
  AD_CHECK(device_.is_cpu(), kInternal, "a tensor on {} read as host memory", DeviceName(device_));
}

void Tensor::CheckDType(DType requested) const {
  AD_CHECK(requested == dtype_, kInternal, "tensor of {} accessed as {}", DTypeName(dtype_),
           DTypeName(requested));
}

void Tensor::CheckElementCount(size_t given, const Tensor& tensor) {
  AD_CHECK(static_cast<int64_t>(given) == tensor.numel(), kInternal,
           "{} values for a tensor of shape {}", given, ShapeToString(tensor.shape()));
}

TensorUpload TensorUpload::Start(const Tensor& host, const Device& device) {
  AD_CHECK(host.device().is_cpu() && !device.is_cpu(), kInternal,
           "an upload goes from the host to a device, not from {} to {}", DeviceName(host.device()),
           DeviceName(device));
  TensorUpload upload;
  // A device allocation is never empty (the constructor's rule).
  upload.upload_ = host.nbytes() == 0
                       ? DeviceMemory::Upload{MemoryOf(device).Allocate(1, device.index), nullptr}
                       : MemoryOf(device).UploadAhead(host.raw(), host.nbytes(), device);
  upload.tensor_ = Tensor(host.dtype(), host.shape(), upload.upload_.data, device);
  return upload;
}

Tensor TensorUpload::Take() {
  AD_CHECK(tensor_.defined(), kInternal, "an upload taken twice, or never started");
  MemoryOf(tensor_.device()).Await(upload_, tensor_.device());
  upload_ = {};
  return std::exchange(tensor_, Tensor());
}

}  // namespace autodist::tensor
