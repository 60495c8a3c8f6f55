// Boost.Beast as the etcd client uses it: the request every gateway call sends and the connect
// step shared by unary calls (etcd_http.cpp) and watch streams (etcd_watch.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "src/store/asio.h"
#include "src/store/url.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace memloom::store::etcd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A POST of `body` (JSON) to `path` on `endpoint`, keeping the connection open.
http::request<http::string_body> gateway_request(const EtcdEndpoint& endpoint,
                                                 const std::string& path, std::string body);

// Connects `stream` to `endpoint` (resolving a host name first), bounded by the stream's expiry
// (set by the caller); `done` gets the error, if any. `resolver` must outlive the operation.
void async_connect_endpoint(beast::tcp_stream& stream, tcp::resolver& resolver,
                            const EtcdEndpoint& endpoint,
                            std::function<void(const boost::system::error_code&)> done);

}  // namespace memloom::store::etcd
