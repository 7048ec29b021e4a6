/*!
 * \file ember/runtime/logging.h
 * \brief Errors as C++ exceptions with streamed context, and the catch-all at the C boundary.
 *
 *   EMBER_CHECK(pf != nullptr) << "no function named " << name;
 *   EMBER_CHECK_EQ(a.ndim, b.ndim) << "CopyFrom: rank mismatch";
 *   EMBER_LOG_FATAL << "params: bad magic in " << file;
 *
 * Each throws ember::runtime::Error when it fires; C entry points wrap their body in
 * EMBER_API_BEGIN() / EMBER_API_END() so the message lands in TVMGetLastError() and -1 is returned.
 */
#ifndef EMBER_RUNTIME_LOGGING_H_
#define EMBER_RUNTIME_LOGGING_H_

#include <ember/runtime/c_runtime_api.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#define EMBER_LIKELY(x) __builtin_expect(!!(x), 1)
#define EMBER_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace ember::runtime {

/*! \brief The one exception type the runtime throws. */
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {

/*!
 * Collects a message through operator<< and throws it as an Error when the statement ends. A
 * failed check passes its condition, used only when nothing was streamed ("internal check failed:
 * <condition>"), and a failed comparison its values, appended as "(a == b: 3 vs. 4)".
 */
class FatalThrower {
 public:
  // Out of line: every check site would otherwise inline a whole ostringstream. The condition
  // arrives as the literal it is and the comparison as the pointer it is: a std::string built
  // at each of the runtime's ~240 check sites cost a call and a cleanup pad apiece.
  FatalThrower();
  explicit FatalThrower(const char* failed_check);
  explicit FatalThrower(std::unique_ptr<std::string> failed_comparison);
  FatalThrower(const FatalThrower&) = delete;
  FatalThrower& operator=(const FatalThrower&) = delete;
  [[noreturn]] ~FatalThrower() noexcept(false);
  std::ostringstream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
  const char* failed_check_ = nullptr;
  std::unique_ptr<std::string> failed_comparison_;
};

/*! Writes one line to stderr when the statement ends (warnings and info). */
class LogLine {
 public:
  LogLine(const char* level, const char* file, int line);
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  ~LogLine();
  std::ostringstream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

/*! Stores the exception's message as the thread's last error; returns -1 for the C caller. */
int HandleApiException(const std::exception& e) noexcept;
int HandleUnknownApiException() noexcept;

/*! Builds "a == b: 3 vs. 4" for a failed comparison; only runs when a check fails. */
template <typename A, typename B>
std::unique_ptr<std::string> CompareFailure(const char* expr, const A& a, const B& b) {
  std::ostringstream os;
  os << expr << ": " << a << " vs. " << b;
  return std::make_unique<std::string>(os.str());
}

#define EMBER_DEFINE_CHECK_OP_(name, op)                                                      \
  template <typename A, typename B>                                                           \
  inline std::unique_ptr<std::string> Check##name(const A& a, const B& b, const char* expr) { \
    if (EMBER_LIKELY(a op b)) return nullptr;                                                 \
    return CompareFailure(expr, a, b);                                                        \
  }
EMBER_DEFINE_CHECK_OP_(EQ, ==)
EMBER_DEFINE_CHECK_OP_(NE, !=)
EMBER_DEFINE_CHECK_OP_(LT, <)
EMBER_DEFINE_CHECK_OP_(LE, <=)
EMBER_DEFINE_CHECK_OP_(GT, >)
EMBER_DEFINE_CHECK_OP_(GE, >=)
#undef EMBER_DEFINE_CHECK_OP_

}  // namespace detail
}  // namespace ember::runtime

/*! \brief Throws ember::runtime::Error with the streamed message. */
#define EMBER_LOG_FATAL ::ember::runtime::detail::FatalThrower().stream()

/*! \brief Writes a warning line to stderr (does not throw). */
#define EMBER_LOG_WARNING ::ember::runtime::detail::LogLine("warning", __FILE__, __LINE__).stream()
#define EMBER_LOG_INFO ::ember::runtime::detail::LogLine("info", __FILE__, __LINE__).stream()

/*! \brief Throws unless \p cond holds; stream a sentence saying what is wrong after it. */
#define EMBER_CHECK(cond)   \
  if (EMBER_LIKELY(cond)) { \
  } else                    \
    ::ember::runtime::detail::FatalThrower(#cond).stream()

#define EMBER_CHECK_BINARY_OP_(name, op, a, b)                                                   \
  if (auto ember_check_failed_ = ::ember::runtime::detail::Check##name(a, b, #a " " #op " " #b); \
      EMBER_LIKELY(!ember_check_failed_)) {                                                      \
  } else                                                                                         \
    ::ember::runtime::detail::FatalThrower(std::move(ember_check_failed_)).stream()

#define EMBER_CHECK_EQ(a, b) EMBER_CHECK_BINARY_OP_(EQ, ==, a, b)
#define EMBER_CHECK_NE(a, b) EMBER_CHECK_BINARY_OP_(NE, !=, a, b)
#define EMBER_CHECK_LT(a, b) EMBER_CHECK_BINARY_OP_(LT, <, a, b)
#define EMBER_CHECK_LE(a, b) EMBER_CHECK_BINARY_OP_(LE, <=, a, b)
#define EMBER_CHECK_GT(a, b) EMBER_CHECK_BINARY_OP_(GT, >, a, b)
#define EMBER_CHECK_GE(a, b) EMBER_CHECK_BINARY_OP_(GE, >=, a, b)
#define EMBER_CHECK_NOTNULL(p) EMBER_CHECK((p) != nullptr)

/*! \brief Opens the body of a C entry point; pair with EMBER_API_END(). */
#define EMBER_API_BEGIN() try {
/*! \brief Closes it: any exception becomes TVMGetLastError() text and a -1 return; else 0. */
#define EMBER_API_END()                                                \
  }                                                                    \
  catch (const std::exception& ember_api_e_) {                         \
    return ::ember::runtime::detail::HandleApiException(ember_api_e_); \
  }                                                                    \
  catch (...) {                                                        \
    return ::ember::runtime::detail::HandleUnknownApiException();      \
  }                                                                    \
  return 0;

#endif  // EMBER_RUNTIME_LOGGING_H_
