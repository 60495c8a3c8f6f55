// Boost.Asio as the store uses it. Boost 1.74's awaitable.hpp uses std::exchange without
// including <utility>, which fails in C++20 mode with newer GCC; including it first fixes that.
#pragma once

#include <utility>

#include <boost/asio.hpp>
