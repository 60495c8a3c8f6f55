// The initiator's side of the TCP data path to one peer: a small pool of connections, and the
// frame pipeline that runs a batch over one of them (see wire_format.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memloom/deadline.h"
#include "src/smem/trans/endpoint_address.h"
#include "src/smem/trans/job_auth.h"
#include "src/smem/trans/socket_io.h"
#include "src/smem/trans/staged_copies.h"
#include "src/smem/trans/transfer_piece.h"

namespace memloom::smem::trans {

class TcpChannel {
 public:
  // With `staging`, local buffers are reached through stream copies of its streams
  // (staged_copies.h); without, sockets read and write them. Every connection starts with the
  // mutual proof of membership in the job whose secret is `secret` (job_auth.h).
  TcpChannel(EndpointAddress peer, const JobSecret& secret,
             std::shared_ptr<StreamPool> staging = nullptr);
  // Runs every piece, in order. Throws the peer's refusal (kInvalidInput for memory it has not
  // registered, ...) prefixed with its name, kCommunication when the connection breaks, kTimeout
  // at the deadline; kCommunication naming the job when either side's proof fails. Safe to call
  // from several threads (each uses its own connection).
  void run(Direction direction, const std::vector<Piece>& pieces, Deadline deadline);

 private:
  UniqueFd checkout(Deadline deadline);
  // The authenticated hello on a new connection (wire_format.h).
  void authenticate(int fd, Deadline deadline);
  void checkin(UniqueFd connection);
  void pipeline(int fd, Direction direction, const std::vector<Piece>& pieces, Deadline deadline);
  void staged(int fd, Direction direction, const std::vector<Piece>& pieces, Deadline deadline);

  EndpointAddress peer_;
  const JobSecret secret_;
  std::shared_ptr<StreamPool> staging_;
  std::mutex mutex_;
  std::vector<UniqueFd> idle_;
};

}  // namespace memloom::smem::trans
