// Errors inside the runtime are gw::Error exceptions carrying a gw_status and a message that says what
// was wrong and what to do. gw::guard() turns them into a status and the thread-local last error at the
// C ABI boundary, so no exception crosses it.
#pragma once

#include <gradwire/types.h>

#include <stdexcept>
#include <string>

namespace gw {

class Error : public std::runtime_error {
 public:
  Error(gw_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  gw_status status() const noexcept { return status_; }

 private:
  gw_status status_;
};

[[noreturn]] void fail(gw_status status, const std::string& message);

// Throws GW_ERR_INVALID_ARGUMENT naming `what` when `p` is NULL.
template <class T>
T* require(T* p, const char* what) {
  if (p == nullptr) fail(GW_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  return p;
}

const char* status_name(gw_status status) noexcept;
void set_last_error(const std::string& message) noexcept;
void clear_last_error() noexcept;
const char* last_error() noexcept;

// Runs `body` (returning gw_status) with the last error cleared; converts any exception into its status
// and the last error. Used by every function of the C ABI.
template <class F>
gw_status guard(F&& body) noexcept {
  clear_last_error();
  try {
    return body();
  } catch (const Error& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return GW_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(std::string("internal error: ") + e.what() + " (please report it)");
    return GW_ERR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception (please report it)");
    return GW_ERR_INTERNAL;
  }
}

}  // namespace gw
