// Slicing a fuzzer's input into the parts a target needs: bytes, small integers and
// length-prefixed records (two bytes, little-endian), so that one flat input drives a sequence of
// messages. Reading past the end yields zeros and empty records: every input is a valid program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace autodist::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : bytes_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return at_ >= bytes_.size(); }

  uint8_t Byte() { return empty() ? 0 : static_cast<uint8_t>(bytes_[at_++]); }

  // The next record: two length bytes, then that many bytes (fewer at the end of the input).
  std::string_view Record() {
    const size_t length = Byte() | (static_cast<size_t>(Byte()) << 8);
    const size_t take = std::min(length, bytes_.size() - std::min(at_, bytes_.size()));
    const std::string_view record = bytes_.substr(std::min(at_, bytes_.size()), take);
    at_ += take;
    return record;
  }

  // Everything not read yet.
  std::string_view Rest() {
    const std::string_view rest = bytes_.substr(std::min(at_, bytes_.size()));
    at_ = bytes_.size();
    return rest;
  }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace autodist::fuzz
