// The .mlpackage protobuf reader (runtime/format/mil_proto.cpp, protowire.cpp,
// model_description.cpp): a serialized CoreML.Specification.Model.
#include "fuzz_support.h"
#include "shardgate/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto model = sg::parse_model_proto(sg::fuzz::as_bytes(data, size), "model.mlmodel");
  if (model) {
    for (const auto& in : model->info.inputs) (void)in.name.size();
  }
  return 0;
}
