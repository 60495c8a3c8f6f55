// One etcd watch (POST /v3/watch, a chunked stream of JSON messages, one per line) on a key or a
// key range, run on a caller's io_context. When the stream breaks (a member died, a connection
// dropped) it reconnects to the next member and resumes at the revision after the last event it
// delivered, so no event is lost or repeated across a failover.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/store/asio.h"
#include "src/store/etcd_stream.h"
#include "src/store/url.h"

namespace memloom::store::etcd {

namespace asio = boost::asio;

struct KvEvent {
  bool deleted = false;
  std::string key;    // the whole etcd key
  std::string value;  // the new value (puts)
  int64_t revision = 0;
};

class WatchStream {
 public:
  using OnEvents = std::function<void(const std::vector<KvEvent>&)>;
  // Told why, each time a whole round of the members failed to take the watch (it keeps trying).
  using OnUnreachable = std::function<void(const std::string& why)>;
  // Watches [key, range_end) ("" range_end: the key alone) from `start_revision`, over HTTPS
  // when `tls` is set. `on_events` runs on the io_context's thread.
  static std::shared_ptr<WatchStream> start(asio::io_context& io,
                                            std::vector<EtcdEndpoint> endpoints, EtcdTls tls,
                                            size_t first_endpoint, std::string key,
                                            std::string range_end, int64_t start_revision,
                                            OnEvents on_events,
                                            OnUnreachable on_unreachable = nullptr);
  virtual ~WatchStream() = default;
  // Stops the stream; no callback runs after it. Call on the io_context's thread.
  virtual void cancel() = 0;
};

// The first key after every key that starts with `prefix` (etcd's range_end for a prefix).
std::string prefix_range_end(const std::string& prefix);

}  // namespace memloom::store::etcd
