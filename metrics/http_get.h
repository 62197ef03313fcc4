// A minimal HTTP/1.0 GET for loopback checks (Prometheus's readiness and
// query API): no TLS, no redirects, no chunked bodies.
#pragma once

#include <string>

namespace tensortier {

struct HttpResponse {
  int status = 0;  // 0: no answer (connection refused, timeout)
  std::string body;
  std::string error;
};

// GET http://host:port/path where `host` is a numeric IPv4 address.
HttpResponse HttpGet(const std::string& host, int port, const std::string& path, double timeout_seconds = 10);

// Percent-encodes a query parameter value.
std::string UrlEncode(const std::string& s);

}  // namespace tensortier
