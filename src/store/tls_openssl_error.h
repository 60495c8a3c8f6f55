// OpenSSL reports failures on a per-thread error queue; memloom turns them into messages.
#pragma once

#include <string>

#include "memloom/error.h"

namespace memloom::store {

// Drains this thread's OpenSSL error queue into "reason; reason" ("" when it is empty), so an
// old error never shows up in a later, unrelated message.
std::string take_openssl_errors();

// Throws memloom::Error(status, "what: <OpenSSL's reasons>").
[[noreturn]] void raise_openssl(Status status, const std::string& what);

}  // namespace memloom::store
