#include "src/store/frame_channel.h"
#include "src/store/url.h"

namespace memloom::store {

std::shared_ptr<FrameConnection> make_tcp_connection(boost::asio::ip::tcp::socket socket,
                                                     size_t max_incoming_frame_bytes) {
  boost::system::error_code error;
  socket.set_option(boost::asio::ip::tcp::no_delay(true), error);
  auto endpoint = socket.remote_endpoint(error);
  std::string remote = error ? std::string("tcp://?")
                             : format_tcp_url(endpoint.address().to_string(), endpoint.port());
  return std::make_shared<FrameChannel<boost::asio::ip::tcp::socket>>(
      std::move(socket), max_incoming_frame_bytes, std::move(remote));
}

}  // namespace memloom::store
