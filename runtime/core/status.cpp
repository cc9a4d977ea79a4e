#include "shardgate/status.h"

namespace sg {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kFormat: return "format error";
    case ErrorCode::kIO: return "i/o error";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kShape: return "shape error";
    case ErrorCode::kMissingParameter: return "missing parameter";
    case ErrorCode::kInvalidProgram: return "invalid program";
    case ErrorCode::kNumeric: return "numeric error";
    case ErrorCode::kUsage: return "usage error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

int exit_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return kExitPass;
    case ErrorCode::kInternal: return kExitInternal;
    default: return kExitBadInput;
  }
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(error_code_name(code_)) + ": " + message_;
}

}  // namespace sg
