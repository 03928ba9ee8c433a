// Test helpers for the RPC transport, written on plain sockets independently of the runtime: a
// listener on 127.0.0.1, and a relay that forwards one connection to a server and keeps a copy of
// every byte either side sent (what a capture on the wire would see).
#pragma once
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace loom::test {

// A socket listening on 127.0.0.1 at a free port (a relay's or a fake server's), closed with it.
struct Listener {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  uint16_t port = 0;
  Listener() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd, 1), 0);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
};

// Connects to 127.0.0.1:port; -1 if that fails.
inline int connect_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Forwards the first connection to its port to 127.0.0.1:`target`, both ways, until either side
// closes or nothing moves for 5 s; wire() is everything sent, in order (read after join()).
class Relay {
 public:
  explicit Relay(uint16_t target)
      : thread_([this, target] {
          int client = ::accept(listener_.fd, nullptr, nullptr);
          int server = connect_loopback(target);
          pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
          static thread_local char buf[1 << 16];
          for (bool open = server >= 0; open && ::poll(fds, 2, 5000) > 0;) {
            for (int k = 0; k < 2; ++k) {
              if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
              ssize_t n = ::recv(fds[k].fd, buf, sizeof buf, 0);
              if (n <= 0) {
                open = false;
                break;
              }
              wire_.append(buf, size_t(n));
              ::send(fds[1 - k].fd, buf, size_t(n), MSG_NOSIGNAL);
            }
          }
          ::close(client);
          if (server >= 0) ::close(server);
        }) {}
  ~Relay() { join(); }
  uint16_t port() const { return listener_.port; }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  const std::string& wire() const { return wire_; }

 private:
  Listener listener_;
  std::string wire_;
  std::thread thread_;  // last: starts once the listener is bound
};

}  // namespace loom::test
