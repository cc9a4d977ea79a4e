// What a list's declared type means. coremltools serializes `make_list(dynamic_length = true,
// init_length = 1)` with the type list<T, 1>: its initial length, not a bound. Read literally,
// every write past the first element of such a list (a TensorArray filled in a loop) would be
// refused. Both program readers end with mark_dynamic_lists(), which makes the declared length
// of every list value that comes from a dynamic make_list unknown (`?`), following it through
// the ops that pass a list on (list_write, list_scatter, ...), loop variables and block inputs
// of while_loop, and cond outputs, so a list's type says "fixed" only when it is.
#pragma once

#include "shardgate/program.h"

namespace sg {

void mark_dynamic_lists(Program& program);

}  // namespace sg
