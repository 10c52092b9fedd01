// TFRecord framing, the container of TensorBoard's event files (and of TensorFlow's record
// files): each record is
//   uint64 length, uint32 masked CRC-32C of those 8 bytes, the data, uint32 masked CRC-32C of it,
// all little-endian. The mask rotates the CRC right by 15 bits and adds 0xa282ead8, so that a CRC
// computed over bytes that themselves hold CRCs stays well distributed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace autodist::observe {

uint32_t MaskedCrc32c(std::string_view bytes);

// The record holding `data`, ready to append to a file.
std::string FrameRecord(std::string_view data);

// The data of every record in `bytes`, in order. A torn last record (a file still being
// written) ends the list quietly when `allow_torn_tail`; any other damage (a length or data CRC
// that does not match, a record cut short) throws InvalidArgument naming `source` and the byte
// offset of the record.
std::vector<std::string> UnframeRecords(std::string_view bytes, const std::string& source,
                                        bool allow_torn_tail);

}  // namespace autodist::observe
