#include "transport/security.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>
#include <zmq.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/files.h"
#include "common/log.h"
#include "transport/internal.h"

namespace tensortier {
namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// `key = "value"` (quotes optional) -> value when the key matches.
bool ValueOf(const std::string& line, const std::string& key, std::string* value) {
  const size_t eq = line.find('=');
  if (eq == std::string::npos || Trim(line.substr(0, eq)) != key) return false;
  std::string v = Trim(line.substr(eq + 1));
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  *value = v;
  return true;
}

// Calls `each(line)` for every line of a key file or allow-list, trimmed,
// that is neither blank nor a # comment.
template <typename Each>
void ForEachKeyLine(const std::string& text, Each&& each) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = Trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    each(line);
  }
}

std::string Z85Binary(const std::string& z85) {
  uint8_t out[32];
  if (!IsZ85Key(z85) || zmq_z85_decode(out, z85.c_str()) == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

std::string BinaryZ85(const std::string& bin) {
  char out[41];
  if (bin.size() != 32 || zmq_z85_encode(out, reinterpret_cast<const uint8_t*>(bin.data()), 32) == nullptr)
    return "";
  return std::string(out, 40);
}

void WriteNewFile(const std::string& path, const std::string& contents, mode_t mode, bool force) {
  if (force) ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno) +
                             (errno == EEXIST ? " (pass --force to replace it)" : ""));
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      throw std::runtime_error("cannot write " + path + ": " + err);
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);  // the umask may have narrowed it; never widened beyond `mode`
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

// ---- the ZAP handler (RFC 27) --------------------------------------------

struct Domain {
  std::set<std::string> keys;  // binary, 32 bytes each
  std::shared_ptr<transport_internal::AuthCounters> counters;
  std::string endpoint;
};

struct ZapHandler {
  std::mutex mu;
  std::map<std::string, Domain> domains;
  uint64_t next_domain = 1;
  bool started = false;

  void Start() {
    // Bind here, on the caller's thread, so that the handler exists before
    // any secured socket binds; then serve on a thread of its own for the
    // life of the process (like the context, never torn down).
    auto* socket = new zmq::socket_t(transport_internal::Context(), zmq::socket_type::rep);
    socket->set(zmq::sockopt::linger, 0);
    try {
      socket->bind("inproc://zeromq.zap.01");
    } catch (const zmq::error_t& e) {
      delete socket;
      throw std::runtime_error(std::string("cannot start the ZAP handler on inproc://zeromq.zap.01: ") + e.what());
    }
    std::thread([this, socket] { Serve(*socket); }).detach();
    started = true;
  }

  void Serve(zmq::socket_t& socket) {
    for (;;) {
      std::vector<zmq::message_t> request;
      try {
        if (!zmq::recv_multipart(socket, std::back_inserter(request))) continue;
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) return;
        continue;
      }
      // version, request id, domain, address, identity, mechanism, credentials...
      std::string version = request.size() > 0 ? request[0].to_string() : "";
      std::string request_id = request.size() > 1 ? request[1].to_string() : "";
      std::string domain = request.size() > 2 ? request[2].to_string() : "";
      std::string address = request.size() > 3 ? request[3].to_string() : "";
      std::string mechanism = request.size() > 5 ? request[5].to_string() : "";
      std::string key = request.size() > 6 ? request[6].to_string() : "";
      bool ok = false;
      std::string reason = "unknown ZAP domain";
      std::shared_ptr<transport_internal::AuthCounters> counters;
      std::string endpoint;
      {
        std::lock_guard<std::mutex> lock(mu);
        auto it = domains.find(domain);
        if (it != domains.end()) {
          counters = it->second.counters;
          endpoint = it->second.endpoint;
          if (version != "1.0" || request.size() < 6) {
            reason = "malformed ZAP request";
          } else if (mechanism != "CURVE") {
            reason = "mechanism " + mechanism + " is not CURVE";
          } else if (it->second.keys.count(key) == 0) {
            reason = "public key not in the allow-list";
          } else {
            ok = true;
            reason = "OK";
          }
        }
      }
      if (!ok) {
        if (counters) ++counters->refused_unknown_key;
        ++transport_internal::ProcessCounters().refused_unknown_key;
        LogWarn("auth_refused").kv("endpoint", endpoint).kv("peer_address", address)
            .kv("mechanism", mechanism).kv("public_key", BinaryZ85(key)).kv("reason", reason);
      } else {
        LogDebug("auth_accepted").kv("endpoint", endpoint).kv("peer_address", address)
            .kv("public_key", BinaryZ85(key));
      }
      const std::string status = ok ? "200" : "400";
      const std::string user_id = ok ? BinaryZ85(key) : "";
      std::vector<zmq::const_buffer> reply = {zmq::str_buffer("1.0"), zmq::buffer(request_id), zmq::buffer(status),
                                             zmq::buffer(reason), zmq::buffer(user_id), zmq::const_buffer()};
      try {
        zmq::send_multipart(socket, reply);
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) return;
      }
    }
  }
};

ZapHandler& Zap() {
  static ZapHandler* handler = new ZapHandler;  // lives as long as the context
  return *handler;
}

}  // namespace

namespace transport_internal {

AuthCounters& ProcessCounters() {
  static AuthCounters* counters = new AuthCounters;
  return *counters;
}

std::string RegisterZapDomain(std::set<std::string> z85_keys, std::shared_ptr<AuthCounters> counters,
                              std::string endpoint_for_logs) {
  ZapHandler& zap = Zap();
  std::lock_guard<std::mutex> lock(zap.mu);
  if (!zap.started) zap.Start();
  Domain d;
  for (const std::string& k : z85_keys) {
    std::string bin = Z85Binary(k);
    if (bin.empty()) throw std::invalid_argument("not a Z85 CURVE public key: '" + k + "'");
    d.keys.insert(bin);
  }
  d.counters = std::move(counters);
  d.endpoint = std::move(endpoint_for_logs);
  std::string name = "tensortier/" + std::to_string(zap.next_domain++);
  zap.domains[name] = std::move(d);
  return name;
}

void UnregisterZapDomain(const std::string& domain) {
  ZapHandler& zap = Zap();
  std::lock_guard<std::mutex> lock(zap.mu);
  zap.domains.erase(domain);
}

}  // namespace transport_internal

bool CurveAvailable() { return zmq_has("curve") == 1; }

void RequireCurve() {
  if (!CurveAvailable()) {
    int major = 0, minor = 0, patch = 0;
    zmq_version(&major, &minor, &patch);
    throw std::runtime_error("this libzmq (" + std::to_string(major) + "." + std::to_string(minor) + "." +
                             std::to_string(patch) +
                             ") was built without CURVE (zmq_has(\"curve\") is false): install a libzmq built "
                             "with libsodium (Debian's libzmq5 is), or run on a trusted network with "
                             "--insecure-plaintext");
  }
}

bool IsZ85Key(const std::string& text) {
  static const char* kAlphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  return text.size() == 40 && text.find_first_not_of(kAlphabet) == std::string::npos;
}

CurveKeyPair GenerateCurveKeyPair() {
  RequireCurve();
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    throw std::runtime_error(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  return {std::string(pub, 40), std::string(sec, 40)};
}

std::string CurvePublicKey(const std::string& z85_secret) {
  RequireCurve();
  if (!IsZ85Key(z85_secret)) throw std::invalid_argument("not a Z85 CURVE secret key");
  char pub[41];
  if (zmq_curve_public(pub, z85_secret.c_str()) != 0) throw std::invalid_argument("not a Z85 CURVE secret key");
  return std::string(pub, 40);
}

std::string FormatKeyPairFile(const CurveKeyPair& pair, const std::string& comment) {
  return "# TensorTier CURVE key pair (ZeroMQ, Z85). SECRET: keep this file mode 0600 and give\n"
         "# only the matching .pub file away. " + comment + "\n"
         "public-key = \"" + pair.public_key + "\"\n"
         "secret-key = \"" + pair.secret_key + "\"\n";
}

std::string FormatPublicKeyFile(const std::string& z85_public, const std::string& comment) {
  return "# TensorTier CURVE public key (ZeroMQ, Z85). " + comment + "\n"
         "public-key = \"" + z85_public + "\"\n";
}

CurveKeyPair ParseKeyFile(const std::string& text, const std::string& origin) {
  CurveKeyPair pair;
  ForEachKeyLine(text, [&](const std::string& line) {
    std::string v;
    if (ValueOf(line, "public-key", &v)) {
      if (!IsZ85Key(v)) throw std::runtime_error(origin + ": public-key is not a 40-character Z85 key");
      pair.public_key = v;
    } else if (ValueOf(line, "secret-key", &v)) {
      if (!IsZ85Key(v)) throw std::runtime_error(origin + ": secret-key is not a 40-character Z85 key");
      pair.secret_key = v;
    } else if (IsZ85Key(line) && pair.public_key.empty()) {
      pair.public_key = line;
    } else {
      throw std::runtime_error(origin + ": cannot read the line '" + line.substr(0, 60) +
                               "' (expected public-key = \"Z85\" or secret-key = \"Z85\")");
    }
  });
  if (pair.public_key.empty() && pair.secret_key.empty()) throw std::runtime_error(origin + ": holds no key");
  if (!pair.secret_key.empty()) {
    const std::string derived = CurvePublicKey(pair.secret_key);
    if (pair.public_key.empty()) pair.public_key = derived;
    if (pair.public_key != derived)
      throw std::runtime_error(origin + ": its public-key is not the public key of its secret-key");
  }
  return pair;
}

CurveKeyPair WriteKeyPairFiles(const std::string& dir, const std::string& name, bool force) {
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.')
    throw std::invalid_argument("a key name is a plain file name, not '" + name + "'");
  MakeDirectories(dir);
  CurveKeyPair pair = GenerateCurveKeyPair();
  const std::string comment = "Name: " + name + ".";
  WriteNewFile(dir + "/" + name + ".key", FormatKeyPairFile(pair, comment), 0600, force);
  WriteNewFile(dir + "/" + name + ".pub", FormatPublicKeyFile(pair.public_key, comment), 0644, force);
  return pair;
}

CurveKeyPair ReadSecretKeyFile(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot read key file " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("key file " + path + " is not a regular file");
  // Owner only; as PostgreSQL does for its keys, a file owned by root may
  // also be group-readable (a Kubernetes Secret mounted with an fsGroup).
  const mode_t forbidden = st.st_uid == 0 ? 037 : 077;
  if (st.st_mode & forbidden) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw std::runtime_error("key file " + path + " is mode " + mode +
                             ": a secret key must be readable by its owner only (chmod 600 " + path +
                             "; a file owned by root may be 0640)");
  }
  CurveKeyPair pair = ParseKeyFile(ReadFile(path, 1 << 16), path);
  if (pair.secret_key.empty())
    throw std::runtime_error(path + " holds a public key only; give the NAME.key file from `tensortier keys`");
  return pair;
}

std::string ReadPublicKey(const std::string& file_or_z85) {
  if (IsZ85Key(file_or_z85)) {
    struct stat st{};
    if (::stat(file_or_z85.c_str(), &st) != 0) return file_or_z85;  // the key itself, not a file name
  }
  return ParseKeyFile(ReadFile(file_or_z85, 1 << 16), file_or_z85).public_key;
}

std::set<std::string> ReadAuthorizedKeys(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    throw std::runtime_error("cannot read the allow-list " + path + ": " + std::strerror(errno));
  std::set<std::string> keys;
  auto add_file = [&](const std::string& file) {
    // One file may list many keys: read it line by line.
    ForEachKeyLine(ReadFile(file, 16 << 20), [&](const std::string& line) {
      std::string v;
      if (ValueOf(line, "public-key", &v) || (IsZ85Key(line) && (v = line, true))) {
        if (!IsZ85Key(v)) throw std::runtime_error(file + ": '" + v.substr(0, 60) + "' is not a Z85 public key");
        keys.insert(v);
      } else if (ValueOf(line, "secret-key", &v)) {
        throw std::runtime_error(file + " holds a secret key: the allow-list takes public keys (NAME.pub) only");
      } else {
        throw std::runtime_error(file + ": cannot read the line '" + line.substr(0, 60) + "'");
      }
    });
  };
  if (S_ISDIR(st.st_mode)) {
    DIR* d = ::opendir(path.c_str());
    if (!d) throw std::runtime_error("cannot list " + path + ": " + std::strerror(errno));
    std::vector<std::string> files;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".pub") == 0) files.push_back(path + "/" + n);
    }
    ::closedir(d);
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) add_file(f);
  } else {
    add_file(path);
  }
  if (keys.empty()) throw std::runtime_error("the allow-list " + path + " holds no public key");
  return keys;
}

bool IsLocalEndpoint(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return true;
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  std::string rest = endpoint.substr(6);
  const size_t semi = rest.find(';');  // tcp://SOURCE;DESTINATION: the destination counts
  if (semi != std::string::npos) rest = rest.substr(semi + 1);
  const size_t colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1") return true;
  if (host.rfind("127.", 0) == 0 && host.find_first_not_of("0123456789.") == std::string::npos) return true;
  return false;
}

void CheckEndpointSecurity(const std::string& endpoint, const TransportSecurity& s, bool server) {
  if (s.curve()) {
    if (s.insecure_plaintext)
      throw std::invalid_argument("--insecure-plaintext and CURVE keys together: choose one");
    RequireCurve();
    if (s.secret_key_file.empty())
      throw std::invalid_argument(std::string("CURVE needs this ") + (server ? "learner" : "worker") +
                                  "'s key pair file (--secret-key NAME.key from `tensortier keys`)");
    if (server && s.authorized_keys.empty())
      throw std::invalid_argument("a CURVE learner needs an allow-list of worker public keys (--authorized-keys)");
    if (!server && s.server_key.empty())
      throw std::invalid_argument("a CURVE worker needs the learner's public key (--server-key learner.pub)");
    return;
  }
  if (!s.insecure_plaintext && !IsLocalEndpoint(endpoint))
    throw std::invalid_argument(
        std::string("refusing to ") + (server ? "bind " : "connect to ") + endpoint +
        " in plain text: it is not a loopback address, and anyone who can reach it could " +
        (server ? "feed the learner" : "impersonate the learner") +
        ". Give CURVE keys (tensortier keys; " +
        (server ? "--secret-key and --authorized-keys" : "--secret-key and --server-key") +
        ", docs/security.md) or, on a trusted network only, --insecure-plaintext");
}

AuthStats ProcessAuthStats() {
  auto& c = transport_internal::ProcessCounters();
  return {c.accepted.load(), c.refused.load(), c.refused_unknown_key.load()};
}

}  // namespace tensortier
