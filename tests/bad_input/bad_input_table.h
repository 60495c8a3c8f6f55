// Table-driven bad input: one row per (public function, invalid argument), with the code the
// function must return and a piece of the message it must leave (smem_get_last_err_msg for the
// MemFabric APIs, the log sink for WholeMemory). The runner calls every row and checks both.
#pragma once

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace memloom::bad_input {

// A row's call returns the API's code, or one of these for functions without a code.
inline constexpr int kFailureValue = INT_MIN;  // returned its documented failure value
inline constexpr int kNoCode = INT_MIN + 1;    // a void function: only the message is checked

struct Row {
  std::string function;  // the public function called
  std::string argument;  // what is invalid
  std::function<int()> call;
  int expected_code;
  std::string message;  // a piece of the reported reason
  // The function named in the message (differs for the published aliases that forward).
  std::string reported_by = "";
};

// Where an API leaves the reason of its last failure.
struct MessageSource {
  std::function<void()> clear;
  std::function<std::string()> last;
};
MessageSource smem_messages();
// Installs a log sink that keeps the last error line (and sets the level so errors are logged).
MessageSource wholememory_messages();

// Runs every row under a SCOPED_TRACE naming it; returns the number of rows.
int run_rows(const std::vector<Row>& rows, const MessageSource& messages);

// kFailureValue when `value` is the function's documented failure value, else 0.
template <typename T>
int failure_value(T value, T failure) {
  return value == failure ? kFailureValue : 0;
}

// Runs a void function and reports kNoCode.
inline int no_code(const std::function<void()>& call) {
  call();
  return kNoCode;
}

// "tcp://127.0.0.1:<a port that was free a moment ago>".
std::string free_store_url();

// "the <backend> backend's granularity", as size errors name it for the backend in use.
std::string backend_granularity_phrase();

// Removes the row for `argument` when device 0 holds at least `api_maximum` bytes: a size both
// allowed by the API and larger than the device does not exist there (an H200 holds 141 GB, the
// MemFabric maximum is 64 GiB). Says so on stdout.
void drop_row_where_device_exceeds(std::vector<Row>& rows, const std::string& argument,
                                   uint64_t api_maximum);

}  // namespace memloom::bad_input
