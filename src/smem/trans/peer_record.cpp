#include "src/smem/trans/peer_record.h"

#include <map>
#include <sstream>

#include "memloom/error.h"

namespace memloom::smem::trans {

std::string peer_key(const std::string& unique_id) {
  return "memloom/smem/trans/peer/" + unique_id;
}

// One "name=value" per line; values never contain a newline (node ids are host names and boot ids).
std::string PeerRecord::encode() const {
  std::ostringstream out;
  out << "version=2\nnode=" << node << "\npid=" << pid << "\nincarnation=" << incarnation
      << "\nrole=" << role << "\ntable=" << table_token << "\ntransport=" << transport << "\n";
  return out.str();
}

PeerRecord PeerRecord::decode(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto equals = line.find('=');
    if (equals != std::string::npos) fields[line.substr(0, equals)] = line.substr(equals + 1);
  }
  auto field = [&](const char* name) -> const std::string& {
    auto it = fields.find(name);
    if (it == fields.end())
      raise(Status::kCommunication, std::string("a transfer peer record lacks '") + name + "'");
    return it->second;
  };
  if (field("version") != "2")
    raise(Status::kCommunication, "a transfer peer record has an unknown version");
  PeerRecord record;
  record.node = field("node");
  record.incarnation = field("incarnation");
  record.table_token = field("table");
  record.transport = field("transport");
  try {
    record.pid = static_cast<pid_t>(std::stol(field("pid")));
    record.role = std::stoi(field("role"));
  } catch (const std::exception&) {
    raise(Status::kCommunication, "a transfer peer record has a malformed pid or role");
  }
  return record;
}

}  // namespace memloom::smem::trans
