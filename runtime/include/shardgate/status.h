// Status and Result<T>: how the runtime reports errors.
//
// The library never aborts and never throws across its API on bad input. Every fallible
// function returns a Status or a Result<T>; the message names the file and the place
// (byte offset, line, function/op/value) so a user can find the problem without a debugger.
// The error code decides the process exit code (see exit_code()).
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace sg {

enum class ErrorCode {
  kOk = 0,
  kFormat,       // a file does not follow its format (truncated, bad magic, bad offset, grammar)
  kIO,           // a file is missing or unreadable
  kUnsupported,  // a construct we know exists but do not handle (unknown op, dtype)
  kShape,        // shapes or dtypes that disagree
  kMissingParameter,  // an op lacks a parameter its definition requires
  kInvalidProgram,    // the program reads but does not hold together: a value used before it is
                      // defined, a compile-time op depending on itself, a state used as a value
  kNumeric,      // NaN/Inf where a finite value is required
  kUsage,        // bad command-line arguments or options
  kInternal,     // a bug in shardgate itself
};

const char* error_code_name(ErrorCode code);

// Process exit codes shared by both executables (README.md): 0 pass, 1 gate failed,
// 2 bad input or usage, 3 internal error.
inline constexpr int kExitPass = 0;
inline constexpr int kExitGateFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;
int exit_code(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with where it happened: "weight.bin: blob at offset 64: ...".
  Status&& with_context(const std::string& where) && {
    if (!is_ok()) message_ = where + ": " + message_;
    return std::move(*this);
  }
  Status& with_context(const std::string& where) & {
    if (!is_ok()) message_ = where + ": " + message_;
    return *this;
  }
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <typename... Args>
Status make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Status status) : data_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    assert(!std::get<1>(data_).is_ok() && "Result built from an ok Status");
  }

  bool is_ok() const { return data_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<1>(data_);
  }
  Status take_status() && { return std::move(std::get<1>(data_)); }
  T& value() & { return std::get<0>(data_); }
  const T& value() const& { return std::get<0>(data_); }
  T&& value() && { return std::get<0>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  Result&& with_context(const std::string& where) && {
    if (!is_ok()) std::get<1>(data_).with_context(where);
    return std::move(*this);
  }

 private:
  std::variant<T, Status> data_;
};

}  // namespace sg

#define SG_CONCAT_INNER(a, b) a##b
#define SG_CONCAT(a, b) SG_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` fails.
#define SG_TRY(expr)                               \
  do {                                             \
    ::sg::Status sg_try_status_ = (expr);          \
    if (!sg_try_status_.is_ok()) return sg_try_status_; \
  } while (0)

// `SG_ASSIGN_OR_RETURN(auto x, f());` declares x from a Result or returns its error.
#define SG_ASSIGN_OR_RETURN(lhs, expr) SG_ASSIGN_OR_RETURN_IMPL(SG_CONCAT(sg_result_, __LINE__), lhs, expr)
#define SG_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.is_ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()

// Returns an error of the given code when `cond` is false; the rest is a fmt format.
#define SG_CHECK(cond, code, ...) \
  do {                            \
    if (!(cond)) return ::sg::make_error((code), __VA_ARGS__); \
  } while (0)
