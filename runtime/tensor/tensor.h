// Tensor: a dense, row-major, typed n-d array with shared storage. Copies share data (like
// PyTorch tensors); Clone() copies. Reshaped() is a zero-copy view with another shape. A tensor
// knows its device (device.h): host code reads a tensor's elements only on the CPU, and a
// kernel of another backend takes the device's pointer with device_data().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tensor/device.h"
#include "runtime/tensor/dtype.h"

namespace autodist::tensor {

using Shape = std::vector<int64_t>;

enum class Pages;  // storage.h

// Number of elements of a shape (1 for a scalar).
int64_t NumElements(const Shape& shape);

// "[2, 3]".
std::string ShapeToString(const Shape& shape);

// Row-major strides in elements.
std::vector<int64_t> Strides(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;  // undefined: no dtype, no storage

  // Allocates uninitialized storage (64-byte aligned, for vectorized kernels). Large buffers come
  // from the process-wide pool (storage.h), so the storage may hold a freed tensor's data.
  Tensor(DType dtype, Shape shape);
  // Uninitialized storage on `device` (the CPU's as above; a GPU's from its DeviceMemory).
  Tensor(DType dtype, Shape shape, const Device& device);

  // Like the constructor, for a caller about to overwrite every byte (a tensor received from the
  // network): the storage's pages are mapped before it returns, with one system call instead of
  // a page fault per 4 KiB page as the writes first touch them.
  static Tensor Prefaulted(DType dtype, Shape shape);
  static Tensor Zeros(DType dtype, Shape shape);
  static Tensor Full(Shape shape, float value);  // float32
  static Tensor Scalar(float value);             // float32, shape []
  // A CPU tensor (uninitialized) in the host staging memory of `near`'s devices
  // (DeviceMemory::AllocateHostStaging: pinned for CUDA), where that kind's backend is installed
  // and offers one; else an ordinary CPU tensor. For host copies of device tensors that are
  // copied every step.
  static Tensor HostStaging(DType dtype, Shape shape, DeviceKind near);
  template <typename T>
  static Tensor FromVector(Shape shape, const std::vector<T>& values);

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(size_t axis) const { return shape_[axis]; }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * ElementSize(dtype_); }
  const Device& device() const { return device_; }

  // Typed access to the elements from the host; throws Internal if T does not match dtype() or
  // the tensor is not on the CPU.
  template <typename T>
  T* data() {
    CheckType(DTypeOf<T>());
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    CheckType(DTypeOf<T>());
    return static_cast<const T*>(raw());
  }
  // The elements on the tensor's device, for that device's kernels (dtype checked, device not).
  template <typename T>
  T* device_data() {
    CheckDType(DTypeOf<T>());
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* device_data() const {
    CheckDType(DTypeOf<T>());
    return static_cast<const T*>(raw());
  }
  // The storage's address on the tensor's device.
  void* raw() { return storage_ ? storage_.get() + offset_ : nullptr; }
  const void* raw() const { return storage_ ? storage_.get() + offset_ : nullptr; }

  // The same data with another shape of equal element count.
  Tensor Reshaped(Shape shape) const;
  // Rows [first, first + count) along the first axis, which are contiguous in row-major order:
  // a view sharing this tensor's storage, so that writes through it land in this tensor.
  // Throws Internal when the rows are not within the tensor or it has no first axis. The view's
  // data keeps the element alignment only, not the 64 bytes of fresh storage: never hand it to
  // code that needs that (direct I/O).
  Tensor RowsView(int64_t first, int64_t count) const;
  // A deep copy, on the same device.
  Tensor Clone() const;
  // A copy on `device` (this tensor itself when it is there already).
  Tensor To(const Device& device) const;
  // Overwrites this tensor's elements with `source`'s, wherever each of them is (host or
  // device), keeping this tensor's storage: what staging between a GPU and the host needs, where
  // a new tensor per step would reallocate. Throws Internal unless dtypes and element counts
  // match.
  void CopyFrom(const Tensor& source);
  // Sets every element to zero.
  void SetZero();
  // Whether two tensors share storage.
  bool SharesStorageWith(const Tensor& other) const { return storage_ == other.storage_; }

  // Element i as double, whatever the dtype (for tests, printing and small index tensors).
  double GetAsDouble(int64_t index) const;
  // All elements as int64 (for shape/axes/index inputs); throws unless an integer type.
  std::vector<int64_t> ToInt64Vector(const std::string& what) const;

 private:
  friend class TensorUpload;
  // `pages` applies to CPU storage.
  Tensor(DType dtype, Shape shape, Pages pages, const Device& device);
  // Over `storage` (at least nbytes, on `device`).
  Tensor(DType dtype, Shape shape, std::shared_ptr<std::byte[]> storage,  // NOLINT
         const Device& device);
  void CheckType(DType requested) const;  // dtype, and the tensor on the CPU
  void CheckDType(DType requested) const;
  static void CheckElementCount(size_t given, const Tensor& tensor);

  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte[]> storage_;
  size_t offset_ = 0;  // bytes
  Device device_;
};

// A host tensor on its way to a device, started ahead of its use (the loader's batches): the
// copy overlaps the device's compute where the device's memory can do that
// (DeviceMemory::UploadAhead).
class TensorUpload {
 public:
  TensorUpload() = default;
  // Starts copying `host` (on the CPU) to `device` (not the CPU); returns once `host` may change.
  static TensorUpload Start(const Tensor& host, const Device& device);
  // The tensor on the device, with the device's work queued from now on ordered after its copy;
  // call it on the thread that queues the work that reads it. Once only.
  Tensor Take();
  bool pending() const { return tensor_.defined(); }

 private:
  Tensor tensor_;  // over the upload's memory; its data arrives with the upload
  DeviceMemory::Upload upload_;
};

template <typename T>
Tensor Tensor::FromVector(Shape shape, const std::vector<T>& values) {
  Tensor out(DTypeOf<T>(), std::move(shape));
  CheckElementCount(values.size(), out);
  T* data = out.data<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  return out;
}

}  // namespace autodist::tensor
