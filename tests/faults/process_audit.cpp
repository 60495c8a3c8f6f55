#include "tests/faults/process_audit.h"

#include <dirent.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <set>
#include <sstream>

namespace memloom::faults {
namespace {

std::vector<std::string> directory_entries(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') names.push_back(entry->d_name);
  }
  ::closedir(dir);
  return names;
}

// Socket inodes listed in one /proc/net table, whose inode sits in column `inode_column`.
void collect_inodes(const std::string& table, size_t inode_column, std::set<std::string>* out) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field;
    for (size_t column = 0; column <= inode_column && fields >> field; ++column) {
      if (column == inode_column) out->insert(field);
    }
  }
}

std::string kind_of(const std::string& target, const std::set<std::string>& tcp,
                    const std::set<std::string>& unix_sockets) {
  if (target.rfind("socket:[", 0) == 0) {
    const std::string inode = target.substr(8, target.size() - 9);
    if (tcp.count(inode)) return "tcp";
    if (unix_sockets.count(inode)) return "unix";
    return "socket";
  }
  if (target.rfind("pipe:", 0) == 0) return "pipe";
  if (target.rfind("/memfd:", 0) == 0) {
    const size_t end = target.find(" (deleted)");
    return "memfd:" + target.substr(7, end == std::string::npos ? std::string::npos : end - 7);
  }
  if (target.rfind("anon_inode:", 0) == 0) return "anon:" + target.substr(11);
  return "file:" + target;
}

}  // namespace

int FdCensus::count(const std::string& kind) const {
  auto it = kinds.find(kind);
  return it == kinds.end() ? 0 : it->second;
}

std::string FdCensus::describe() const {
  std::ostringstream out;
  out << total << " fds";
  for (const auto& [kind, n] : kinds) out << ", " << kind << " x" << n;
  return out.str();
}

FdCensus take_fd_census() {
  std::set<std::string> tcp, unix_sockets;
  collect_inodes("/proc/self/net/tcp", 9, &tcp);
  collect_inodes("/proc/self/net/tcp6", 9, &tcp);
  collect_inodes("/proc/self/net/unix", 6, &unix_sockets);
  FdCensus census;
  const std::string dir = "/proc/self/fd";
  for (const std::string& name : directory_entries(dir)) {
    char target[PATH_MAX];
    const ssize_t length = ::readlink((dir + "/" + name).c_str(), target, sizeof(target) - 1);
    if (length < 0) continue;  // the descriptor opendir itself used, closed by now
    target[length] = '\0';
    const std::string kind = kind_of(target, tcp, unix_sockets);
    if (kind == "file:" + dir) continue;  // our own directory handle
    ++census.kinds[kind];
    ++census.total;
  }
  return census;
}

std::string fd_growth(const FdCensus& before, const FdCensus& after) {
  std::ostringstream out;
  for (const auto& [kind, n] : after.kinds) {
    const int grown = n - before.count(kind);
    if (grown > 0) out << (out.tellp() > 0 ? ", " : "") << kind << " +" << grown;
  }
  return out.str();
}

void become_subreaper() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

std::vector<int> live_children() {
  std::vector<int> alive;
  for (const std::string& task : directory_entries("/proc/self/task")) {
    std::ifstream children("/proc/self/task/" + task + "/children");
    int pid = 0;
    while (children >> pid) {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
      const size_t paren = text.rfind(')');
      const bool zombie =
          paren != std::string::npos && text.size() > paren + 2 && text[paren + 2] == 'Z';
      if (!text.empty() && !zombie) alive.push_back(pid);
    }
  }
  return alive;
}

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace memloom::faults
