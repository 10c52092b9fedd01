// The one error-handling style of the codebase (docs/errors.md): failures are thrown as
// autodist::Error, carrying a code and a message that names the file, field, op or peer involved.
// Boundaries (CLI main, RPC handlers, the reconciler) catch Error and turn it into an exit code,
// an RPC status or a condition.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace autodist {

enum class ErrorCode {
  kInvalidArgument,     // bad user input: a flag, a manifest field, a model, a YAML value
  kNotFound,            // a named file, variable or resource does not exist
  kFailedPrecondition,  // the system is not in a state where the operation can run
  kUnavailable,         // a peer or service could not be reached (retryable)
  kInternal,            // a bug: an invariant of ours did not hold
};

// Short stable name of a code, e.g. "InvalidArgument".
const char* ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}

  ErrorCode code() const { return code_; }

  // True for errors caused by what the user gave us (exit code 2 in the CLI).
  bool IsUserError() const {
    return code_ == ErrorCode::kInvalidArgument || code_ == ErrorCode::kNotFound;
  }

 private:
  ErrorCode code_;
};

// Throws Error(code, formatted message).
template <typename... Args>
[[noreturn]] void Fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace autodist

// AD_CHECK(condition, code, format, args...): throws autodist::Error when condition is false.
// The condition must be a bool (no pointers or integers), so a check always states a predicate.
#define AD_CHECK(condition, code, ...)                                            \
  do {                                                                            \
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(condition)>, bool>, \
                  "AD_CHECK takes a bool condition");                             \
    if (!(condition)) ::autodist::Fail(::autodist::ErrorCode::code, __VA_ARGS__); \
  } while (false)
