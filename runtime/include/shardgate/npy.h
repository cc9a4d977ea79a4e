// NumPy .npy files (format versions 1.0, 2.0, 3.0): read (memory-mapped, zero copy for
// little-endian C-order data) and write (atomically). Supported dtypes: f2, f4, f8, i1, i2,
// i4, i8, u1, u2, u4, u8, b1. Errors name the file and what is wrong with its header.
#pragma once

#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <memory>
#include <string>

namespace sg {

class MappedFile;  // shardgate/io.h

// Reads `path`; the tensor is a read-only view into the mapped file (fp64 and big-endian or
// Fortran-order data are converted into an owned copy; f8 becomes fp64 tensors).
Result<Tensor> read_npy(const std::string& path);
// The same over a file already mapped (a caller that hashed it first); the tensor keeps
// `file` alive. Errors name file->path().
Result<Tensor> read_npy(std::shared_ptr<const MappedFile> file);
// Parses .npy bytes held in memory (used by tests and by safetensors-like containers).
Result<Tensor> parse_npy(std::span<const std::byte> bytes, const std::string& name_for_errors);
// Writes `t` as a version 1.0 .npy file (atomic rename). fp16 tensors are written as '<f2'.
Status write_npy(const std::string& path, const Tensor& t);
std::string npy_bytes(const Tensor& t);

}  // namespace sg
