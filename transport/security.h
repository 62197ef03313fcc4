// Authentication of the fleet sockets: ZeroMQ CURVE (Curve25519 keys, every
// frame encrypted and authenticated) with a ZAP handler that admits only the
// worker public keys the learner lists. docs/security.md has the whole story.
//
//  - Keys are Z85 text (40 characters for 32 bytes). `tensortier keys`
//    writes NAME.key (the pair; mode 0600, refused when group/other can read
//    it) and NAME.pub (the public key alone), both in the same line format:
//        public-key = "Z85..."
//        secret-key = "Z85..."      (NAME.key only)
//    with '#' comments.
//  - An allow-list (--authorized-keys) is a directory whose *.pub files are
//    read, or one file; either way every `public-key = "..."` line, or bare
//    40-character Z85 line, admits one worker key.
//  - Without keys a socket speaks plain text (ZMTP NULL), which is allowed
//    only on loopback, ipc:// and inproc:// endpoints unless
//    `insecure_plaintext` is set: binding or connecting anything else without
//    keys throws.
#pragma once

#include <cstdint>
#include <set>
#include <string>

namespace tensortier {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters; empty for a public key alone
};

// What a socket needs to authenticate. Empty = plain text.
struct TransportSecurity {
  // Learner and worker: this process's key pair file (NAME.key).
  std::string secret_key_file;
  // Learner only: allow-list of worker public keys (directory of *.pub or one file).
  std::string authorized_keys;
  // Worker only: the learner's public key: a NAME.pub/NAME.key file or the Z85 text itself.
  std::string server_key;
  // Plain text on a non-loopback endpoint; the flag --insecure-plaintext.
  bool insecure_plaintext = false;

  bool curve() const { return !secret_key_file.empty() || !authorized_keys.empty() || !server_key.empty(); }
};

// Whether this libzmq was built with CURVE (zmq_has("curve")).
bool CurveAvailable();
// Throws std::runtime_error with a clear message when CURVE is not available.
void RequireCurve();

// A fresh key pair (zmq_curve_keypair).
CurveKeyPair GenerateCurveKeyPair();
// The public key of a Z85 secret key; throws when it is not a valid key.
std::string CurvePublicKey(const std::string& z85_secret);
bool IsZ85Key(const std::string& text);

// NAME.key / NAME.pub contents (the format above).
std::string FormatKeyPairFile(const CurveKeyPair& pair, const std::string& comment);
std::string FormatPublicKeyFile(const std::string& z85_public, const std::string& comment);
// Parses either format; throws std::runtime_error naming `origin` when no
// valid key is found or the secret does not match the public key.
CurveKeyPair ParseKeyFile(const std::string& text, const std::string& origin);

// Writes DIR/NAME.key (0600, never overwritten unless `force`) and
// DIR/NAME.pub (0644); returns the pair.
CurveKeyPair WriteKeyPairFiles(const std::string& dir, const std::string& name, bool force);
// Reads a key pair file and refuses one that group or others can read.
CurveKeyPair ReadSecretKeyFile(const std::string& path);
// A public key given as Z85 text or as a file holding one.
std::string ReadPublicKey(const std::string& file_or_z85);
// The worker keys an allow-list admits (Z85); throws when it holds none.
std::set<std::string> ReadAuthorizedKeys(const std::string& path);

// True for tcp:// endpoints on 127.0.0.0/8, ::1 and localhost, and for
// ipc:// and inproc:// (which never leave the host).
bool IsLocalEndpoint(const std::string& endpoint);
// Throws std::invalid_argument when `endpoint` may not be used with
// `security` (plain text off loopback without the flag, keys missing for
// the role, keys with the flag, CURVE unavailable).
void CheckEndpointSecurity(const std::string& endpoint, const TransportSecurity& security, bool server);

// Handshakes seen by secured servers, over the whole process (each
// FleetServer also has its own, see FleetServer::auth_stats).
struct AuthStats {
  uint64_t accepted = 0;             // handshakes completed: the allow-list admitted the key
  uint64_t refused = 0;              // handshakes failed, whatever the reason: no CURVE (a
                                     // plain-text peer), a wrong learner key, garbage, or
                                     // a key the allow-list does not hold
  uint64_t refused_unknown_key = 0;  // of those, keys the ZAP handler refused
};
AuthStats ProcessAuthStats();

}  // namespace tensortier
