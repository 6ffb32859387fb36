// CRC32c (Castagnoli, reflected polynomial 0x82F63B78), the CRC MPA puts at the end of each
// FPDU and of nothing else (RFC 5044 section 4.4, which takes it from iSCSI, RFC 3720 B.4).
// On the wire it is the value's four bytes least significant first (wire::store_le32).
//
// Two implementations of the same function: slicing-by-8 tables anywhere, and the SSE4.2
// crc32 instruction where the CPU has it (checked once at run time, so one binary runs on
// any x86-64), as three chains side by side over each 12 KiB of a long run.  crc32c() picks the fast one; the others are public so that tests hold both
// to the same known answers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ndk::soft::iwarp {

// The CRC of `data` continued from `crc`, the CRC of what came before it (0 for nothing):
// crc32c(b, crc32c(a)) == crc32c(a followed by b), so an FPDU's CRC can be computed over its
// pieces (length, headers, payload, pad) without gathering them.
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0);

std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc = 0);
bool crc32c_hardware_available();
// Only where crc32c_hardware_available(); elsewhere it is crc32c_portable().
std::uint32_t crc32c_hardware(std::span<const std::byte> data, std::uint32_t crc = 0);

} // namespace ndk::soft::iwarp
