// blob_refs.h: finding and checking a program's weight references.
#include "shardgate/blob_refs.h"

#include "shardgate/blob.h"
#include "shardgate/shard.h"

namespace sg {
namespace {

void collect_value(const Value& v, std::vector<BlobRef>& out) {
  if (v.blob) out.push_back(*v.blob);
  for (const Value& e : v.elements) collect_value(e, out);
  for (const DictEntry& e : v.entries) {
    collect_value(e.first, out);
    collect_value(e.second, out);
  }
}

}  // namespace

void collect_blob_refs(const Block& block, std::vector<BlobRef>& out) {
  for (const Op& op : block.ops) {
    for (const auto& [name, value] : op.attributes) collect_value(value, out);
    for (const auto& [name, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (b.literal) collect_value(*b.literal, out);
      }
    }
    for (const Block& nested : op.blocks) collect_blob_refs(nested, out);
  }
}

std::vector<BlobRef> collect_blob_refs(const Program& program) {
  std::vector<BlobRef> out;
  for (const Function& fn : program.functions) collect_blob_refs(fn.block, out);
  return out;
}

Status verify_blob_refs(const Shard& shard) {
  for (const BlobRef& ref : collect_blob_refs(shard.program())) {
    SG_ASSIGN_OR_RETURN(std::shared_ptr<const BlobFile> file, shard.blob_file(ref));
    SG_TRY(file->info_at(ref.offset).status());
  }
  return Status::ok();
}

}  // namespace sg
