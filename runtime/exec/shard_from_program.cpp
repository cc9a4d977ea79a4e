// Shard::from_program: a shard whose program was built in memory rather than read from disk.
// The executor only needs the program, the I/O description and "@model_path", so programs
// assembled by tests and tools run through exactly the same path as opened models.
#include "shardgate/shard.h"

namespace sg {

std::shared_ptr<Shard> Shard::from_program(Program program, ModelInfo info,
                                           std::string model_dir) {
  auto shard = std::shared_ptr<Shard>(new Shard());
  shard->path_ = model_dir.empty() ? std::string("<in-memory program>") : model_dir;
  shard->form_ = ShardForm::kPackage;
  shard->program_ = std::move(program);
  shard->info_ = std::move(info);
  shard->program_file_ = "<in-memory program>";
  shard->model_dir_ = std::move(model_dir);
  return shard;
}

}  // namespace sg
