// NumPy .npz archives (np.savez: stored members; np.savez_compressed: deflate members): a zip
// file of .npy members. Read through the central directory (zip64 sizes and offsets included,
// as numpy writes them), every member's CRC-32 checked. Deflate is decoded by zlib (a declared
// dependency: zlib1g-dev). Anything else — another compression method, encryption, a member
// that is not NAME.npy, a split archive — is a kUnsupported / kFormat error naming the archive
// and the member.
#pragma once

#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <map>
#include <string>

namespace sg {

// The members of `path` by name without ".npy" (np.savez(f, x=a) -> {"x": a}), as owned tensors.
Result<std::map<std::string, Tensor>> read_npz(const std::string& path);

}  // namespace sg
