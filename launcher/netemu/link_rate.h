// Link rates as users write them for an emulated network (`--network 1gbit`): a number and a
// unit, in tc's spelling (kbit, mbit, gbit; bits per second, powers of 1000), or `unshaped`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace autodist::netemu {

// The rate in bits per second; nullopt for "unshaped" (the veth pair's own speed). Accepts
// "100mbit", "1gbit", "2.5gbit", "25Gbit/s" (case-insensitive, an optional "/s"). Throws
// InvalidArgument naming `what` (the flag) for anything else, or for a rate below 1 kbit/s or
// above 1 Tbit/s.
std::optional<int64_t> ParseLinkRate(const std::string& text, const std::string& what);

// "100 Mbit/s", "2.5 Gbit/s", "unshaped": for messages and tables.
std::string FormatLinkRate(const std::optional<int64_t>& bits_per_second);

}  // namespace autodist::netemu
