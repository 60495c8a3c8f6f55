#include "src/smem/smem_world.h"

#include <map>
#include <mutex>

#include "memloom/error.h"
#include "src/base/environment.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"
#include "src/store/etcd_client.h"
#include "src/store/url.h"

namespace memloom::smem {
namespace {

// Every process inits the same API the same number of times, so a per-process count gives every
// rank the same fresh key prefix for each init (a store may outlive one init).
std::string next_world_prefix(const std::string& api) {
  static std::mutex mutex;
  static std::map<std::string, int> generations;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string job = base::Environment::read().job_id;
  return "smem/" + (job.empty() ? std::string() : job + "/") + api + "/w" +
         std::to_string(generations[api]++) + "/";
}

// With an etcd URL there is no server to start: the cluster is checked to be reachable instead.
std::unique_ptr<store::Server> start_server(const std::string& url, const store::TlsSetting& tls,
                                            std::chrono::milliseconds timeout) {
  if (store::is_etcd_url(url)) {
    store::check_etcd_reachable(url, timeout, tls);
    return nullptr;
  }
  store::ServerOptions options;
  options.listen_url = url;
  options.tls = tls;
  return store::Server::start(options);
}

}  // namespace

SmemWorld::~SmemWorld() {
  // The group's collectives and the client go before the server they talk to.
  group_.reset();
  client_.reset();
  server_.reset();
}

std::unique_ptr<SmemWorld> SmemWorld::serve_only(const std::string& url,
                                                 const store::TlsSetting& tls) {
  std::unique_ptr<SmemWorld> world(new SmemWorld(store::KeyPrefix("")));
  world->server_ = start_server(url, tls, store::ClientOptions{}.connect_timeout);
  return world;
}

std::unique_ptr<SmemWorld> SmemWorld::join(const WorldOptions& options) {
  MEMLOOM_CHECK_ARG(options.world_size > 0, "worldSize must be positive");
  std::unique_ptr<SmemWorld> world(new SmemWorld(store::KeyPrefix(next_world_prefix(options.api))));
  world->device_ = options.device;

  if (options.start_server) {
    if (options.rank >= 0) {
      world->server_ =
          start_server(options.store_url, options.store_tls, options.deadline.remaining());
    } else {
      // With auto ranking no rank is known yet: whoever binds the address first serves; the
      // others find it taken and connect as clients.
      try {
        world->server_ =
            start_server(options.store_url, options.store_tls, options.deadline.remaining());
      } catch (const Error& error) {
        MEMLOOM_LOG(kInfo, "smem " << options.api << ": not starting a config store at "
                                   << options.store_url << " (" << error.what() << ")");
      }
    }
  }

  store::ClientOptions client_options;
  client_options.connect_timeout = options.deadline.remaining();
  client_options.rank = options.rank;
  client_options.group = world->prefix_.prefix();
  client_options.tls = options.store_tls;
  world->client_ = store::Client::connect(options.store_url, client_options);

  int rank = options.rank;
  if (rank < 0) {
    int64_t ticket = world->client_->add(world->prefix_("next_rank"), 1) - 1;
    if (ticket >= options.world_size) {
      raise(Status::kInvalidInput, "auto ranking: " + std::to_string(ticket + 1) +
                                       " processes asked for a rank of a world of " +
                                       std::to_string(options.world_size));
    }
    rank = static_cast<int>(ticket);
  }
  MEMLOOM_CHECK_ARG(rank < options.world_size, "rankId " + std::to_string(rank) +
                                                   " is out of range [0, " +
                                                   std::to_string(options.world_size) + ")");
  auto& platform = core::platform();
  if (options.device < 0 || options.device >= platform.device_count()) {
    raise(Status::kInvalidInput, "deviceId " + std::to_string(options.device) +
                                     " is out of range: the " + platform.name() + " backend has " +
                                     std::to_string(platform.device_count()) + " device(s)");
  }
  platform.set_current_device(options.device);
  world->group_ =
      core::Group::create(world->client_, world->prefix_.sub("world"), rank, options.world_size,
                          options.deadline, core::GroupTraffic::kControl);
  return world;
}

}  // namespace memloom::smem
