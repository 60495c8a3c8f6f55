#include "src/store/launch_store.h"

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/store/url.h"

namespace memloom::store {

std::unique_ptr<Server> serve_launch_store(const base::LaunchInfo& launch) {
  const TcpUrl url = parse_tcp_url(launch.store_url);
  const bool loopback = url.host == "127.0.0.1" || url.host == "::1";
  ServerOptions options;
  options.listen_url =
      loopback ? url.to_string() : format_tcp_url(url.ipv6 ? "::" : "0.0.0.0", url.port);
  try {
    std::unique_ptr<Server> server = Server::start(options);
    MEMLOOM_LOG(kInfo, "rank 0 serves the job's config store at " << launch.store_url << " ("
                                                                  << launch.store_source << ")");
    return server;
  } catch (const Error& error) {
    raise(Status::kCommunication,
          "rank 0 could not serve the job's config store at " + launch.store_url + " (" +
              launch.store_source + "): " + error.what() +
              ". Set MEMLOOM_STORE_PORT to a free port, or MEMLOOM_STORE_URL to a running store "
              "(memloom-store), the same on every rank");
  }
}

}  // namespace memloom::store
