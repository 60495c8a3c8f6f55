// The store server's answers: each request a session sends, decoded and carried out against the
// engine on the I/O thread (so the engine needs no locks), its reply or kError sent back.
#include <string>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/store/server_internals.h"

namespace memloom::store::server_internals {

void ServerImpl::dispatch(const std::shared_ptr<Session>& session,
                          const protocol::FrameHeader& header, std::string&& payload) {
  uint16_t type = header.type;
  if (!protocol::is_request(type)) {
    raise(Status::kCommunication,
          "store protocol violation: message type " + std::to_string(type) + " is not a request");
  }
  bool is_hello = type == static_cast<uint16_t>(protocol::MessageType::kHello);
  if (is_hello == session->hello_done) {
    raise(Status::kCommunication, is_hello
                                      ? "store protocol violation: a second hello"
                                      : "store protocol violation: the first frame is " +
                                            std::string(protocol::type_name(type)) + ", not hello");
  }
  protocol::PayloadReader reader(payload, protocol::type_name(type));
  handle_request(session, type, header.request_id, reader);
}

void ServerImpl::handle_request(const std::shared_ptr<Session>& session, uint16_t type, uint64_t id,
                                protocol::PayloadReader& reader) {
  auto reply = [&](protocol::MessageType request) {
    return protocol::FrameWriter(protocol::reply_type(request), id);
  };
  // Decoding errors above this call close the connection; refusals inside `run` become kError.
  auto run = [&](auto&& operation) {
    try {
      operation();
    } catch (const Error& refusal) {
      session->send(protocol::FrameWriter(protocol::MessageType::kError, id)
                        .u32(static_cast<uint32_t>(refusal.status()))
                        .str(refusal.what())
                        .finish());
    }
  };

  switch (static_cast<protocol::MessageType>(type)) {
    case protocol::MessageType::kHello: {
      protocol::Hello hello = protocol::read_hello(reader, limits_.max_key_bytes);
      bool joined = false;
      run([&] {
        namespaces_.join(hello.job_namespace, hello.namespace_key);
        joined = true;
      });
      if (!joined) {
        // Refused (not the job's secret): the kError went out; the connection stays without a
        // hello, so it can do nothing else, and is closed at auth_timeout (TLS: the heartbeat
        // timeout) if it does not leave.
        std::string suppressed;
        if (refusal_log_.admit(&suppressed)) {
          MEMLOOM_LOG(kWarn, "store server: refused " << session->remote() << " in job '"
                                                      << hello.job_namespace
                                                      << "': not the job's secret" << suppressed);
        }
        return;
      }
      session->hello_done = true;
      admission_.remove(session->admission_ticket);  // a valid first frame: authenticated
      session->admission_ticket = 0;
      session->rank = hello.rank;
      session->job_namespace = std::move(hello.job_namespace);
      session->group = session->scoped(hello.group);
      if (hello.heartbeat_timeout_ms > 0) {
        session->set_heartbeat_timeout(std::chrono::milliseconds(
            std::min<uint64_t>(hello.heartbeat_timeout_ms, uint64_t{24} * 3600 * 1000)));
      }
      session->send(reply(protocol::MessageType::kHello)
                        .u16(protocol::kVersion)
                        .u64(limits_.max_frame_bytes)
                        .u64(limits_.max_key_bytes)
                        .u64(limits_.max_value_bytes)
                        .finish());
      return;
    }
    case protocol::MessageType::kHeartbeat:
      reader.finish();
      return session->send(reply(protocol::MessageType::kHeartbeat).finish());
    case protocol::MessageType::kSet: {
      std::string key = reader.str();
      std::string value = reader.str();
      reader.finish();
      return run([&] {
        engine_.set(session->scoped(key), std::move(value));
        session->send(reply(protocol::MessageType::kSet).finish());
      });
    }
    case protocol::MessageType::kGet: {
      std::string key = reader.str();
      uint64_t timeout_ms = reader.u64();
      reader.finish();
      auto timeout = std::chrono::milliseconds(std::min<uint64_t>(timeout_ms, INT32_MAX));
      return run([&] { engine_.get(session, id, session->scoped(key), timeout); });
    }
    case protocol::MessageType::kAdd: {
      std::string key = reader.str();
      int64_t delta = reader.i64();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kAdd)
                          .i64(engine_.add(session->scoped(key), delta))
                          .finish());
      });
    }
    case protocol::MessageType::kCompareAndSwap: {
      std::string key = reader.str();
      std::string expected = reader.str();
      std::string desired = reader.str();
      bool expected_missing = reader.boolean();
      reader.finish();
      return run([&] {
        auto result = engine_.compare_and_swap(session->scoped(key), expected, std::move(desired),
                                               expected_missing);
        session->send(reply(protocol::MessageType::kCompareAndSwap)
                          .u8(result.swapped)
                          .u8(result.current_exists)
                          .str(result.current)
                          .finish());
      });
    }
    case protocol::MessageType::kAppend: {
      std::string key = reader.str();
      std::string value = reader.str();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kAppend)
                          .u64(engine_.append(session->scoped(key), value))
                          .finish());
      });
    }
    case protocol::MessageType::kRemove: {
      std::string key = reader.str();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kRemove)
                          .u8(engine_.remove(session->scoped(key)))
                          .finish());
      });
    }
    case protocol::MessageType::kRemovePrefix: {
      std::string prefix = reader.str();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kRemovePrefix)
                          .u64(engine_.remove_prefix(session->scoped(prefix)))
                          .finish());
      });
    }
    case protocol::MessageType::kWatchKey:
    case protocol::MessageType::kWatchRankDown: {
      uint64_t watch_id = reader.u64();
      std::string name = reader.str();
      reader.finish();
      return run([&] {
        if (type == static_cast<uint16_t>(protocol::MessageType::kWatchKey)) {
          engine_.watch_key(session, watch_id, session->scoped(name));
        } else {
          engine_.watch_rank_down(session, watch_id, session->scoped(name));
        }
        session->send(reply(static_cast<protocol::MessageType>(type)).finish());
      });
    }
    case protocol::MessageType::kUnwatch: {
      uint64_t watch_id = reader.u64();
      reader.finish();
      engine_.unwatch(*session, watch_id);
      return session->send(reply(protocol::MessageType::kUnwatch).finish());
    }
    case protocol::MessageType::kEvent:
    case protocol::MessageType::kError:
      break;
  }
  raise(Status::kCommunication,
        "store protocol violation: unhandled message type " + std::to_string(type));
}

}  // namespace memloom::store::server_internals
