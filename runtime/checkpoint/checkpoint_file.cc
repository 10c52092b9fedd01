#include "runtime/checkpoint/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>

#include "proto/checkpoint.pb.h"
#include "runtime/common/crc32c.h"
#include "runtime/common/direct_io.h"
#include "runtime/common/durable_file.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::checkpoint {
namespace {

constexpr std::array<char, 8> kMagic = {'A', 'D', 'C', 'K', 'P', 'T', '0', '2'};
constexpr std::array<char, 4> kTrailerMagic = {'A', 'D', 'C', 'E'};
constexpr uint64_t kTrailerBytes = 8 + 8 + 4 + 4;
// Tensor data starts on cache lines, as tensor storage does; a large tensor's on a page, so
// writing and reading it with direct I/O (DurableFile, ReadFileRange) moves it between the disk
// and the tensor's own page-aligned storage with no copy in between.
constexpr uint64_t kAlignment = 64;
constexpr uint64_t kLargeAlignment = kDirectIoBlockBytes;

uint64_t AlignmentOf(uint64_t bytes) {
  return bytes >= std::min<uint64_t>(DurableFile::kDirectMinBytes, kDirectReadMinBytes)
             ? kLargeAlignment
             : kAlignment;
}
constexpr uint64_t kChunkBytes = uint64_t{16} << 20;  // read, written, summed at a time

// Reads `size` bytes at `offset` of `path` into `out` and returns their CRC-32C. This thread reads
// piece by piece while another checksums the pieces already read, so the checksum takes no time
// beside the disk's (one core reads, the other sums).
uint32_t ReadChecksummed(const std::string& path, uint64_t offset, void* out, uint64_t size,
                         const std::string& what) {
  auto* bytes = static_cast<char*>(out);
  if (size < 8 * kChunkBytes) {
    ReadFileRange(path, static_cast<int64_t>(offset), out, size, what);
    return Crc32c(out, size);
  }
  std::mutex mutex;
  std::condition_variable read_more;
  uint64_t ready = 0;  // bytes read so far
  bool stopped = false;
  auto checksum = std::async(std::launch::async, [&] {
    uint32_t crc = 0;
    uint64_t done = 0;
    while (done < size) {
      uint64_t available = 0;
      {
        std::unique_lock lock(mutex);
        read_more.wait(lock, [&] { return stopped || ready > done; });
        if (ready <= done) return crc;  // stopped by a failed read
        available = ready;
      }
      crc = Crc32cExtend(crc, bytes + done, available - done);
      done = available;
    }
    return crc;
  });
  try {
    for (uint64_t done = 0; done < size; done += kChunkBytes) {
      const uint64_t piece = std::min<uint64_t>(kChunkBytes, size - done);
      ReadFileRange(path, static_cast<int64_t>(offset + done), bytes + done, piece, what);
      {
        const std::lock_guard lock(mutex);
        ready = done + piece;
      }
      read_more.notify_one();
    }
  } catch (...) {
    {
      const std::lock_guard lock(mutex);
      stopped = true;
    }
    read_more.notify_one();
    checksum.wait();
    throw;
  }
  return checksum.get();
}

uint64_t ShapeBytes(const tensor::Shape& shape, tensor::DType dtype) {
  uint64_t elements = 1;
  for (const int64_t dim : shape) elements *= static_cast<uint64_t>(dim);
  return elements * tensor::ElementSize(dtype);
}

// The bytes a tensor of `shape` read from a file needs, checked: no negative dimension, and no
// product that overflows (which could wrap around to the stored length and have a damaged file
// allocate without bound; the fuzzer's find). Throws InvalidArgument naming `what`.
uint64_t CheckedShapeBytes(const tensor::Shape& shape, tensor::DType dtype,
                           const std::string& what) {
  uint64_t bytes = tensor::ElementSize(dtype);
  for (const int64_t dim : shape) {
    AD_CHECK(dim >= 0, kInvalidArgument, "{}: negative dimension in {}", what,
             tensor::ShapeToString(shape));
    AD_CHECK(!__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes), kInvalidArgument,
             "{}: shape {} is too large", what, tensor::ShapeToString(shape));
  }
  return bytes;
}

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

template <typename T>
void PutLittleEndian(char* out, T value) {
  std::memcpy(out, &value, sizeof(T));  // little-endian hosts only, as everywhere in this code
}

template <typename T>
T GetLittleEndian(const char* in) {
  T value{};
  std::memcpy(&value, in, sizeof(T));
  return value;
}

// The header's tensor table for one section; `offset` advances over the section's data.
void AddEntries(const NamedTensors& tensors,
                google::protobuf::RepeatedPtrField<proto::TensorEntry>* entries, uint64_t& offset) {
  for (const auto& [name, value] : tensors) {
    AD_CHECK(value.device().is_cpu(), kInternal, "checkpoint: '{}' is not on the host", name);
    proto::TensorEntry* entry = entries->Add();
    entry->set_name(name);
    entry->set_data_type(static_cast<int32_t>(value.dtype()));
    for (const int64_t dim : value.shape()) entry->add_dims(dim);
    offset = AlignUp(offset, AlignmentOf(value.nbytes()));
    entry->set_offset(offset);
    entry->set_length(value.nbytes());
    entry->set_crc32c(0);  // filled in as the data is written; present, so the size is fixed
    offset += value.nbytes();
  }
}

void AddPieced(const std::vector<PiecedTensor>& tensors,
               google::protobuf::RepeatedPtrField<proto::TensorEntry>* entries) {
  for (const PiecedTensor& tensor : tensors) {
    proto::TensorEntry* entry = entries->Add();
    entry->set_name(tensor.name);
    entry->set_data_type(static_cast<int32_t>(tensor.dtype));
    for (const int64_t dim : tensor.shape) entry->add_dims(dim);
    for (const ShardPieceRef& piece : tensor.pieces) {
      proto::ShardPiece* out = entry->add_pieces();
      out->set_file(piece.file);
      out->set_name(piece.name);
      out->set_axis(piece.axis);
      out->set_offset(piece.offset);
      out->set_extent(piece.extent);
    }
  }
}

// The header with its table laid out after the magic; checksums are filled in as data is
// written.
proto::CheckpointHeader LayOut(const CheckpointContents& contents, uint64_t& data_end) {
  proto::CheckpointHeader header;
  header.set_step(contents.meta.step);
  header.set_epoch(contents.meta.epoch);
  header.set_batch(contents.meta.batch);
  header.set_rng_state(contents.meta.rng_state);
  header.set_model(contents.meta.model);
  uint64_t offset = kMagic.size();
  AddEntries(contents.variables, header.mutable_variables(), offset);
  AddEntries(contents.states, header.mutable_states(), offset);
  AddEntries(contents.optimizer, header.mutable_optimizer(), offset);
  data_end = offset;
  // After the entries with data, so WriteSection finds those at the same indices.
  AddPieced(contents.pieced_variables, header.mutable_variables());
  AddPieced(contents.pieced_optimizer, header.mutable_optimizer());
  return header;
}

void WriteSection(DurableFile& file, const NamedTensors& tensors,
                  google::protobuf::RepeatedPtrField<proto::TensorEntry>* entries) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const tensor::Tensor& value = tensors[i].second;
    proto::TensorEntry& entry = (*entries)[static_cast<int>(i)];
    file.PadTo(AlignmentOf(value.nbytes()));
    AD_CHECK(file.position() == entry.offset(), kInternal, "checkpoint: '{}' laid out at {}, at {}",
             entry.name(), entry.offset(), file.position());
    // Checksummed piece by piece just before each piece is written, while it is still cached.
    const auto* bytes = static_cast<const char*>(value.raw());
    uint32_t crc = 0;
    for (uint64_t done = 0; done < value.nbytes(); done += kChunkBytes) {
      const uint64_t piece = std::min<uint64_t>(kChunkBytes, value.nbytes() - done);
      crc = Crc32cExtend(crc, bytes + done, piece);
      file.Write(bytes + done, piece);
    }
    entry.set_crc32c(crc);
  }
}

CheckpointMeta MetaOf(const proto::CheckpointHeader& header) {
  return CheckpointMeta{header.step(), header.epoch(), header.batch(), header.rng_state(),
                        header.model()};
}

std::vector<CheckpointReader::Entry> EntriesOf(
    const google::protobuf::RepeatedPtrField<proto::TensorEntry>& entries, uint64_t data_end,
    const std::string& path) {
  std::vector<CheckpointReader::Entry> out;
  for (const proto::TensorEntry& entry : entries) {
    const std::string what = fmt::format("checkpoint '{}': tensor '{}'", path, entry.name());
    CheckpointReader::Entry e;
    e.name = entry.name();
    e.dtype = tensor::DTypeFromOnnx(entry.data_type(), what);
    e.shape.assign(entry.dims().begin(), entry.dims().end());
    const uint64_t shape_bytes = CheckedShapeBytes(e.shape, e.dtype, what);
    e.offset = entry.offset();
    e.length = entry.length();
    e.crc32c = entry.crc32c();
    if (entry.pieces_size() > 0) {
      for (const proto::ShardPiece& piece : entry.pieces()) {
        AD_CHECK(!piece.file().empty() && piece.file().find('/') == std::string::npos &&
                     piece.axis() >= -1 && piece.axis() < static_cast<int>(e.shape.size()) &&
                     piece.offset() >= 0 && piece.extent() >= 0 &&
                     (piece.axis() < 0 || piece.offset() + piece.extent() <=
                                              e.shape[static_cast<size_t>(piece.axis())]),
                 kInvalidArgument, "{}: piece '{}' of '{}' does not fit shape {}", what,
                 piece.name(), piece.file(), tensor::ShapeToString(e.shape));
        e.pieces.push_back(ShardPieceRef{piece.file(), piece.name(), piece.axis(), piece.offset(),
                                         piece.extent()});
      }
      out.push_back(std::move(e));
      continue;
    }
    AD_CHECK(e.length == shape_bytes, kInvalidArgument, "{}: {} bytes for shape {} of {}", what,
             e.length, tensor::ShapeToString(e.shape), tensor::DTypeName(e.dtype));
    AD_CHECK(e.offset <= data_end && e.length <= data_end - e.offset, kInvalidArgument,
             "{}: bytes {}..{} lie outside the file's data (which ends at {})", what, e.offset,
             e.offset + e.length, data_end);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<CheckpointReader::Entry> LegacyEntriesOf(
    const google::protobuf::RepeatedPtrField<proto::TensorValue>& values, const std::string& path) {
  std::vector<CheckpointReader::Entry> out;
  for (const proto::TensorValue& value : values) {
    const std::string what = fmt::format("checkpoint '{}': tensor '{}'", path, value.name());
    CheckpointReader::Entry e;
    e.name = value.name();
    e.dtype = tensor::DTypeFromOnnx(value.data_type(), what);
    e.shape.assign(value.dims().begin(), value.dims().end());
    e.length = value.data().size();
    // Checked here, before a read allocates the tensor its dims describe.
    AD_CHECK(e.length == CheckedShapeBytes(e.shape, e.dtype, what), kInvalidArgument,
             "{}: holds {} bytes, its shape {} needs {}", what, e.length,
             tensor::ShapeToString(e.shape), ShapeBytes(e.shape, e.dtype));
    e.legacy = &value;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

uint64_t CheckpointFileSize(const CheckpointContents& contents) {
  uint64_t data_end = 0;
  const proto::CheckpointHeader header = LayOut(contents, data_end);
  return data_end + header.ByteSizeLong() + kTrailerBytes;
}

uint64_t WriteCheckpointFile(const std::string& path, const CheckpointContents& contents) {
  uint64_t data_end = 0;
  proto::CheckpointHeader header = LayOut(contents, data_end);
  // Checksums are present fixed32 fields: the header's size is known before they are filled in.
  const uint64_t expected = data_end + header.ByteSizeLong() + kTrailerBytes;
  DurableFile file(path, expected, "checkpoint");
  file.Write(kMagic.data(), kMagic.size());
  WriteSection(file, contents.variables, header.mutable_variables());
  WriteSection(file, contents.states, header.mutable_states());
  WriteSection(file, contents.optimizer, header.mutable_optimizer());
  const uint64_t header_offset = file.position();
  std::string bytes;
  AD_CHECK(header.SerializeToString(&bytes), kInternal, "cannot serialize the checkpoint header");
  file.Write(bytes.data(), bytes.size());
  std::array<char, kTrailerBytes> trailer{};
  PutLittleEndian<uint64_t>(trailer.data(), header_offset);
  PutLittleEndian<uint64_t>(trailer.data() + 8, bytes.size());
  PutLittleEndian<uint32_t>(trailer.data() + 16, Crc32c(bytes.data(), bytes.size()));
  std::memcpy(trailer.data() + 20, kTrailerMagic.data(), kTrailerMagic.size());
  file.Write(trailer.data(), trailer.size());
  const uint64_t size = file.position();
  file.Commit();
  return size;
}

CheckpointReader::CheckpointReader(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  const auto status = std::filesystem::status(path_, ec);
  AD_CHECK(std::filesystem::exists(status), kNotFound, "checkpoint '{}' does not exist", path_);
  AD_CHECK(std::filesystem::is_regular_file(status), kInvalidArgument,
           "checkpoint '{}' is not a regular file", path_);
  const uint64_t size = std::filesystem::file_size(path_, ec);
  std::array<char, kMagic.size()> magic{};
  if (size < kMagic.size() + kTrailerBytes) {
    // Too short for this format: an old-format message, or a file cut short.
    OpenLegacy(ReadFileBytes(path_, "checkpoint"));
    return;
  }
  ReadFileRange(path_, 0, magic.data(), magic.size(), "checkpoint");
  if (magic != kMagic) {
    OpenLegacy(ReadFileBytes(path_, "checkpoint"));
    return;
  }
  std::array<char, kTrailerBytes> trailer{};
  ReadFileRange(path_, static_cast<int64_t>(size - kTrailerBytes), trailer.data(), trailer.size(),
                "checkpoint");
  AD_CHECK(std::memcmp(trailer.data() + 20, kTrailerMagic.data(), kTrailerMagic.size()) == 0,
           kInvalidArgument,
           "checkpoint '{}' is torn: it has no trailer (the write that made it did not finish)",
           path_);
  const auto header_offset = GetLittleEndian<uint64_t>(trailer.data());
  const auto header_length = GetLittleEndian<uint64_t>(trailer.data() + 8);
  const auto header_crc = GetLittleEndian<uint32_t>(trailer.data() + 16);
  AD_CHECK(header_offset >= kMagic.size() && header_offset <= size - kTrailerBytes &&
               header_length == size - kTrailerBytes - header_offset,
           kInvalidArgument, "checkpoint '{}' is corrupt: its trailer places the header at {}+{}",
           path_, header_offset, header_length);
  std::string bytes(header_length, '\0');
  ReadFileRange(path_, static_cast<int64_t>(header_offset), bytes.data(), bytes.size(),
                "checkpoint");
  AD_CHECK(Crc32c(bytes.data(), bytes.size()) == header_crc, kInvalidArgument,
           "checkpoint '{}' is corrupt: its header fails its checksum", path_);
  proto::CheckpointHeader header;
  AD_CHECK(header.ParseFromString(bytes), kInvalidArgument,
           "checkpoint '{}' is corrupt: its header does not parse", path_);
  meta_ = MetaOf(header);
  variables_ = EntriesOf(header.variables(), header_offset, path_);
  states_ = EntriesOf(header.states(), header_offset, path_);
  optimizer_ = EntriesOf(header.optimizer(), header_offset, path_);
}

void CheckpointReader::OpenLegacy(const std::string& bytes) {
  legacy_ = std::make_unique<proto::Checkpoint>();
  AD_CHECK(!bytes.empty() && legacy_->ParseFromString(bytes), kInvalidArgument,
           "'{}' is not a checkpoint (or is torn: neither this release's format nor a complete "
           "message of the previous one)",
           path_);
  meta_ = CheckpointMeta{legacy_->step(), legacy_->epoch(), legacy_->batch(), legacy_->rng_state(),
                         legacy_->model()};
  variables_ = LegacyEntriesOf(legacy_->variables(), path_);
  states_ = LegacyEntriesOf(legacy_->states(), path_);
  optimizer_ = LegacyEntriesOf(legacy_->optimizer(), path_);
}

CheckpointReader::~CheckpointReader() = default;
CheckpointReader::CheckpointReader(CheckpointReader&&) noexcept = default;
CheckpointReader& CheckpointReader::operator=(CheckpointReader&&) noexcept = default;

void CheckpointReader::ReadInto(const Entry& entry, tensor::Tensor& target) const {
  AD_CHECK(
      target.device().is_cpu() && target.dtype() == entry.dtype && target.shape() == entry.shape,
      kInternal, "checkpoint '{}': '{}' read into a tensor of another type or shape", path_,
      entry.name);
  if (!entry.pieces.empty()) {
    ReadPieces(entry, target);
    return;
  }
  ReadBytes(entry, target.raw());
}

void CheckpointReader::ReadBytes(const Entry& entry, void* out) const {
  if (entry.legacy != nullptr) {
    AD_CHECK(entry.legacy->data().size() == entry.length &&
                 entry.length == ShapeBytes(entry.shape, entry.dtype),
             kInvalidArgument, "checkpoint '{}': '{}' holds {} bytes, its shape {} needs {}", path_,
             entry.name, entry.legacy->data().size(), tensor::ShapeToString(entry.shape),
             ShapeBytes(entry.shape, entry.dtype));
    if (entry.length > 0) std::memcpy(out, entry.legacy->data().data(), entry.length);
    return;
  }
  const uint32_t crc =
      ReadChecksummed(path_, entry.offset, out, entry.length,
                      fmt::format("checkpoint '{}': tensor '{}'", path_, entry.name));
  AD_CHECK(crc == entry.crc32c, kInvalidArgument,
           "checkpoint '{}' is corrupt: tensor '{}' fails its checksum", path_, entry.name);
}

const CheckpointReader& CheckpointReader::Shard(const std::string& file) const {
  auto& shard = shards_[file];
  if (shard == nullptr) {
    const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
    shard = std::make_unique<CheckpointReader>((dir / file).string());
  }
  return *shard;
}

void CheckpointReader::ReadPieces(const Entry& entry, tensor::Tensor& out) const {
  const size_t element = tensor::ElementSize(entry.dtype);
  for (const ShardPieceRef& piece : entry.pieces) {
    const CheckpointReader& shard = Shard(piece.file);
    const Entry* source = shard.Find(piece.name);
    AD_CHECK(source != nullptr && source->pieces.empty() && source->dtype == entry.dtype,
             kInvalidArgument, "checkpoint '{}': '{}' of '{}' is missing from '{}'", path_,
             piece.name, entry.name, shard.path());
    if (piece.axis < 0) {
      AD_CHECK(source->shape == entry.shape, kInvalidArgument,
               "checkpoint '{}': '{}' in '{}' is {}, '{}' is {}", path_, piece.name, shard.path(),
               tensor::ShapeToString(source->shape), entry.name,
               tensor::ShapeToString(entry.shape));
      shard.ReadBytes(*source, out.raw());
      continue;
    }
    const auto axis = static_cast<size_t>(piece.axis);
    tensor::Shape expected = entry.shape;
    expected[axis] = piece.extent;
    AD_CHECK(source->shape == expected, kInvalidArgument,
             "checkpoint '{}': '{}' in '{}' is {}; as rows {}..{} of '{}' it must be {}", path_,
             piece.name, shard.path(), tensor::ShapeToString(source->shape), piece.offset,
             piece.offset + piece.extent, entry.name, tensor::ShapeToString(expected));
    int64_t outer = 1;
    for (size_t a = 0; a < axis; ++a) outer *= entry.shape[a];
    int64_t inner = 1;
    for (size_t a = axis + 1; a < entry.shape.size(); ++a) inner *= entry.shape[a];
    const size_t row = static_cast<size_t>(inner) * element;
    auto* whole = static_cast<char*>(out.raw());
    if (outer == 1) {  // a contiguous block of the whole: read straight into it
      shard.ReadBytes(*source, whole + static_cast<size_t>(piece.offset) * row);
      continue;
    }
    const tensor::Tensor part = shard.Read(*source);
    const auto* from = static_cast<const char*>(part.raw());
    const size_t block = static_cast<size_t>(piece.extent) * row;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(whole + (static_cast<size_t>(o * entry.shape[axis] + piece.offset)) * row,
                  from + static_cast<size_t>(o) * block, block);
    }
  }
}

void CheckpointReader::CheckPiecesHoldEnough(const Entry& entry) const {
  uint64_t held = 0;
  for (const ShardPieceRef& piece : entry.pieces) {
    const CheckpointReader& shard = Shard(piece.file);
    const Entry* source = shard.Find(piece.name);
    AD_CHECK(source != nullptr && source->pieces.empty(), kInvalidArgument,
             "checkpoint '{}': '{}' of '{}' is missing from '{}'", path_, piece.name, entry.name,
             shard.path());
    held += source->length;  // checked against its own file when the shard was opened
  }
  const uint64_t needed = ShapeBytes(entry.shape, entry.dtype);
  AD_CHECK(held >= needed, kInvalidArgument,
           "checkpoint '{}': the pieces of '{}' hold {} bytes; its shape {} needs {}", path_,
           entry.name, held, tensor::ShapeToString(entry.shape), needed);
}

tensor::Tensor CheckpointReader::Read(const Entry& entry) const {
  // A header could describe a tensor of any size: what its pieces hold is checked before the
  // whole is allocated (entries without pieces were checked against their file when opened).
  if (!entry.pieces.empty()) CheckPiecesHoldEnough(entry);
  // Overwritten whole: its pages are mapped in at once rather than one fault per page.
  tensor::Tensor out = tensor::Tensor::Prefaulted(entry.dtype, entry.shape);
  ReadInto(entry, out);
  return out;
}

const CheckpointReader::Entry* CheckpointReader::Find(const std::string& name) const {
  for (const auto* section : {&variables_, &states_, &optimizer_}) {
    for (const Entry& entry : *section) {
      if (entry.name == name) return &entry;
    }
  }
  return nullptr;
}

}  // namespace autodist::checkpoint
