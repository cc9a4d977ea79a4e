// The two SHA-256 compressions behind sha256_hex(), exposed for the test that holds the
// x86 SHA-extension path to the portable one on every length around the padding boundaries.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace sg::detail {

std::string sha256_hex_portable(std::span<const std::byte> data);
// True when sha256_hex() uses the CPU's SHA instructions on this machine.
bool sha256_uses_cpu_extensions();

}  // namespace sg::detail
