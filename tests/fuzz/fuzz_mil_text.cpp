// model.mil text reader (runtime/format/mil_text.cpp, mil_lexer.cpp, mil_text_literal.cpp).
#include "fuzz_support.h"
#include "shardgate/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto program = sg::parse_mil_text(sg::fuzz::as_text(data, size), "model.mil");
  if (program) {
    // Printing every type walks what the parser built (types, nested blocks).
    for (const auto& f : program->functions) {
      for (const auto& in : f.inputs) (void)in.type.to_string();
      for (const auto& op : f.block.ops) {
        for (const auto& out : op.outputs) (void)out.type.to_string();
      }
    }
  }
  return 0;
}
