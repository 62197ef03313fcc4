#include "metrics/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <stdexcept>

#include "common/files.h"
#include "common/log.h"

namespace tensortier {

std::string MetricsAddress::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool MetricsDisabled(const std::string& address) {
  return address.empty() || address == "off" || address == "none";
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

MetricsAddress ParseMetricsAddress(const std::string& address) {
  auto fail = [&](const std::string& why) {
    return std::invalid_argument("metrics address '" + address + "': " + why +
                                 " (expected HOST:PORT, [IPV6]:PORT or PORT)");
  };
  MetricsAddress a;
  std::string port;
  if (address.empty()) throw fail("empty");
  if (address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':')
      throw fail("unbalanced brackets");
    a.host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else if (address.find(':') == std::string::npos) {
    a.host = "127.0.0.1";  // a bare port: loopback, never every interface
    port = address;
  } else {
    const size_t colon = address.rfind(':');
    a.host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) throw fail("put an IPv6 host in brackets");
  }
  if (a.host.empty()) throw fail("no host (use 0.0.0.0 to listen on every interface)");
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5)
    throw fail("the port is not a number");
  a.port = std::stoi(port);
  if (a.port > 65535) throw fail("the port is out of range");
  return a;
}

namespace {

// Binds and listens on `a` (numeric host; "localhost" = 127.0.0.1); the
// kernel picks the port when it is 0. Returns the fd and sets a.port.
int Listen(MetricsAddress& a) {
  const bool v6 = a.host.find(':') != std::string::npos;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (v6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(static_cast<uint16_t>(a.port));
    if (::inet_pton(AF_INET6, a.host.c_str(), &s6->sin6_addr) != 1)
      throw std::invalid_argument("metrics address: '" + a.host + "' is not a numeric IPv6 address");
    len = sizeof *s6;
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(static_cast<uint16_t>(a.port));
    if (::inet_pton(AF_INET, a.host == "localhost" ? "127.0.0.1" : a.host.c_str(), &s4->sin_addr) != 1)
      throw std::invalid_argument("metrics address: '" + a.host + "' is not a numeric IPv4 address");
    len = sizeof *s4;
  }
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 64) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error("cannot serve metrics on " + a.ToString() + ": " + std::strerror(err));
  }
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
    a.port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR && errno != EAGAIN) return false;
    if (n > 0) sent += static_cast<size_t>(n);
  }
  return true;
}

std::string Response(int status, const char* reason, const std::string& type, const std::string& body,
                     bool head) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + (head ? "" : body);
}

}  // namespace

MetricsServer::MetricsServer(const std::string& address)
    : bound_(ParseMetricsAddress(address)), registry_(std::make_shared<prometheus::Registry>()) {
  if (!IsLoopbackHost(bound_.host))
    LogWarn("metrics_public").kv("address", bound_.ToString())
        .kv("detail", "the metrics endpoint is reachable from other hosts");
  listen_fd_ = Listen(bound_);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { Serve(); });
  LogInfo("metrics_listening").kv("address", bound_.ToString()).kv("url", url());
}

MetricsServer::~MetricsServer() {
  uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) < 0) {
  }
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
}

void MetricsServer::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    Answer(fd);
    ::close(fd);
  }
}

// One request per connection: GET /metrics (HEAD too); 404 for other paths.
void MetricsServer::Answer(int fd) {
  std::string request;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (request.find("\r\n\r\n") == std::string::npos && request.find("\n\n") == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return;
    }
    request.append(buf, static_cast<size_t>(n));
    if (request.size() > 16384) {
      SendAll(fd, Response(431, "Request Header Fields Too Large", "text/plain", "", false));
      return;
    }
  }
  const size_t sp1 = request.find(' '), sp2 = request.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    SendAll(fd, Response(400, "Bad Request", "text/plain", "bad request\n", false));
    return;
  }
  const std::string method = request.substr(0, sp1);
  std::string path = request.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    SendAll(fd, Response(405, "Method Not Allowed", "text/plain", "GET /metrics\n", false));
    return;
  }
  if (path == "/metrics") {
    ++scrapes_;
    const std::string body = prometheus::TextSerializer().Serialize(registry_->Collect());
    SendAll(fd, Response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", body, head));
  } else if (path == "/") {
    SendAll(fd, Response(200, "OK", "text/plain; charset=utf-8", "TensorTier metrics: GET /metrics\n", head));
  } else {
    SendAll(fd, Response(404, "Not Found", "text/plain", "not found; try /metrics\n", head));
  }
}

namespace {
std::string Sanitise(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out;
}
}  // namespace

FileSdTarget::FileSdTarget(const std::string& dir, const std::string& role, const std::string& name,
                           const std::string& address, const std::map<std::string, std::string>& labels) {
  MakeDirectories(dir);
  path_ = dir + "/" + role + "-" + (name.empty() ? "" : Sanitise(name) + "-") + std::to_string(::getpid()) + ".json";
  nlohmann::json group = {{"targets", {address}}, {"labels", nlohmann::json::object()}};
  for (const auto& [k, v] : labels) group["labels"][k] = v;
  WriteFileAtomically(path_, nlohmann::json::array({group}).dump(2) + "\n");
  LogInfo("metrics_target_file").kv("path", path_);
}

FileSdTarget::~FileSdTarget() { std::remove(path_.c_str()); }

}  // namespace tensortier
