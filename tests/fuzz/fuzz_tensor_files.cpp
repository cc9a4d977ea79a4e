// Tensor files: .npy (runtime/core/npy.cpp), .npz (npz.cpp, stored and deflated members) and
// .safetensors (runtime/golden/safetensors.cpp, header and shardgate metadata). The first byte
// picks the reader (make_seeds.sh prefixes each seed with it); the rest is the file.
#include "fuzz_support.h"
#include "shardgate/golden.h"
#include "shardgate/npy.h"
#include "shardgate/npz.h"
#include "shardgate/tensor.h"

namespace {

// Reading every element of a small tensor checks that the view the reader made is in bounds.
constexpr int64_t kMaxDecodedElements = 1 << 16;

void touch(const sg::Tensor& t) {
  if (t.numel() <= kMaxDecodedElements) (void)sg::to_f32(t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t kind = data[0] % 3;
  ++data;
  --size;
  switch (kind) {
    case 0: {
      auto t = sg::parse_npy(sg::fuzz::as_bytes(data, size), "input.npy");
      if (t) touch(*t);
      break;
    }
    case 1: {
      auto members = sg::read_npz(sg::fuzz::write_scratch("calls.npz", sg::fuzz::as_text(data, size)));
      if (members) {
        for (const auto& [name, t] : *members) touch(t);
      }
      break;
    }
    default: {
      // Through the golden source, as `compare` and `run` open it: header, metadata, then every
      // tensor loaded.
      const std::string path =
          sg::fuzz::write_scratch("golden.safetensors", sg::fuzz::as_text(data, size));
      sg::GoldenOpenOptions options;
      options.position_axis_given = true;  // so tensors without metadata are loadable too
      auto source = sg::open_safetensors(path, options);
      if (source) {
        for (const sg::GoldenEntry& e : (*source)->entries()) {
          auto t = (*source)->load(e.name);
          if (t) touch(*t);
        }
      }
      break;
    }
  }
  return 0;
}
