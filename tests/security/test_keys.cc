// Key files, allow-lists and the plain-text rules (transport/security.h).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/files.h"
#include "transport/channel.h"
#include "transport/security.h"
#include "tests/common/temp_dir.h"

namespace tensortier {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) { return testing::TempDir("sec-" + name); }

unsigned Mode(const std::string& path) {
  struct stat st{};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

TEST(Keys, LibzmqHasCurve) { EXPECT_TRUE(CurveAvailable()); }

TEST(Keys, WrittenWithRestrictivePermissionsAndReadBack) {
  const std::string dir = TempDir("keys");
  CurveKeyPair pair = WriteKeyPairFiles(dir, "learner", false);
  EXPECT_TRUE(IsZ85Key(pair.public_key));
  EXPECT_TRUE(IsZ85Key(pair.secret_key));
  EXPECT_NE(pair.public_key, pair.secret_key);
  EXPECT_EQ(Mode(dir + "/learner.key"), 0600u);
  EXPECT_EQ(Mode(dir + "/learner.pub"), 0644u);
  // The .pub file holds no secret.
  EXPECT_EQ(ReadFile(dir + "/learner.pub").find(pair.secret_key), std::string::npos);

  CurveKeyPair read = ReadSecretKeyFile(dir + "/learner.key");
  EXPECT_EQ(read.public_key, pair.public_key);
  EXPECT_EQ(read.secret_key, pair.secret_key);
  EXPECT_EQ(ReadPublicKey(dir + "/learner.pub"), pair.public_key);
  EXPECT_EQ(ReadPublicKey(pair.public_key), pair.public_key);  // the Z85 text itself
  EXPECT_EQ(CurvePublicKey(pair.secret_key), pair.public_key);

  // Never overwritten silently; --force replaces.
  EXPECT_THROW(WriteKeyPairFiles(dir, "learner", false), std::runtime_error);
  CurveKeyPair again = WriteKeyPairFiles(dir, "learner", true);
  EXPECT_NE(again.public_key, pair.public_key);
  EXPECT_THROW(WriteKeyPairFiles(dir, "../escape", false), std::invalid_argument);
}

TEST(Keys, SecretKeyReadableByOthersIsRefused) {
  const std::string dir = TempDir("mode");
  WriteKeyPairFiles(dir, "w", false);
  ASSERT_EQ(::chmod((dir + "/w.key").c_str(), 0644), 0);
  try {
    ReadSecretKeyFile(dir + "/w.key");
    FAIL() << "a world-readable secret key was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
  }
  // A public key file is not a key pair.
  EXPECT_THROW(ReadSecretKeyFile(dir + "/w.pub"), std::runtime_error);
}

TEST(Keys, MalformedKeyFilesAreRefused) {
  CurveKeyPair a = GenerateCurveKeyPair(), b = GenerateCurveKeyPair();
  EXPECT_THROW(ParseKeyFile("", "x"), std::runtime_error);
  EXPECT_THROW(ParseKeyFile("public-key = \"short\"\n", "x"), std::runtime_error);
  EXPECT_THROW(ParseKeyFile("hello world\n", "x"), std::runtime_error);
  // A public key that does not belong to the secret key.
  EXPECT_THROW(ParseKeyFile("public-key = \"" + a.public_key + "\"\nsecret-key = \"" + b.secret_key + "\"\n", "x"),
               std::runtime_error);
  CurveKeyPair ok = ParseKeyFile("# c\n\nsecret-key = \"" + a.secret_key + "\"\n", "x");
  EXPECT_EQ(ok.public_key, a.public_key);
}

TEST(Keys, AllowListFromDirectoryOrFile) {
  const std::string dir = TempDir("allow");
  fs::create_directories(dir + "/workers");
  CurveKeyPair w1 = WriteKeyPairFiles(dir + "/workers", "w1", false);
  CurveKeyPair w2 = WriteKeyPairFiles(dir + "/workers", "w2", false);
  // Only *.pub files of a directory count (the .key files beside them are ignored).
  std::set<std::string> keys = ReadAuthorizedKeys(dir + "/workers");
  EXPECT_EQ(keys, (std::set<std::string>{w1.public_key, w2.public_key}));

  const std::string file = dir + "/authorized";
  WriteFileAtomically(file, "# fleet\n" + w1.public_key + "\npublic-key = \"" + w2.public_key + "\"\n");
  EXPECT_EQ(ReadAuthorizedKeys(file), keys);

  WriteFileAtomically(dir + "/empty", "# nothing\n");
  EXPECT_THROW(ReadAuthorizedKeys(dir + "/empty"), std::runtime_error);
  EXPECT_THROW(ReadAuthorizedKeys(dir + "/workers/w1.key"), std::runtime_error);  // holds a secret
  EXPECT_THROW(ReadAuthorizedKeys(dir + "/missing"), std::runtime_error);
}

TEST(PlainText, OnlyOnLoopbackUnlessAskedFor) {
  EXPECT_TRUE(IsLocalEndpoint("tcp://127.0.0.1:5555"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://127.1.2.3:*"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://localhost:5555"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://[::1]:5555"));
  EXPECT_TRUE(IsLocalEndpoint("ipc:///tmp/tt.sock"));
  EXPECT_TRUE(IsLocalEndpoint("inproc://x"));
  EXPECT_TRUE(IsLocalEndpoint("tcp://10.0.0.1:0;127.0.0.1:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://0.0.0.0:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://*:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://eth0:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://127.0.0.1.evil.example:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://learner-host:5555"));
  EXPECT_FALSE(IsLocalEndpoint("tcp://127.0.0.1:0;10.0.0.1:5555"));
  EXPECT_FALSE(IsLocalEndpoint("udp://127.0.0.1:5555"));

  try {
    FleetServer s("tcp://0.0.0.0:*");
    FAIL() << "bound every interface in plain text";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--insecure-plaintext"), std::string::npos) << e.what();
  }
  EXPECT_THROW(FleetClient("tcp://192.0.2.1:5555"), std::invalid_argument);

  TransportSecurity insecure;
  insecure.insecure_plaintext = true;
  FleetServer open("tcp://0.0.0.0:*", insecure);
  EXPECT_FALSE(open.authenticated());
  FleetClient client("tcp://192.0.2.1:5555", insecure);  // connects lazily

  FleetServer loopback("tcp://127.0.0.1:*");  // make run and the tests
  EXPECT_FALSE(loopback.authenticated());
}

TEST(PlainText, IncompleteOrContradictoryKeySettingsAreErrors) {
  const std::string dir = TempDir("settings");
  WriteKeyPairFiles(dir, "learner", false);
  WriteKeyPairFiles(dir, "w", false);
  TransportSecurity s;
  s.secret_key_file = dir + "/learner.key";
  EXPECT_THROW(FleetServer("tcp://127.0.0.1:*", s), std::invalid_argument);  // no allow-list
  EXPECT_THROW(FleetClient("tcp://127.0.0.1:5555", s), std::invalid_argument);  // no server key
  s.authorized_keys = dir + "/w.pub";
  s.insecure_plaintext = true;
  EXPECT_THROW(FleetServer("tcp://127.0.0.1:*", s), std::invalid_argument);  // both
  TransportSecurity only_list;
  only_list.authorized_keys = dir + "/w.pub";
  EXPECT_THROW(FleetServer("tcp://127.0.0.1:*", only_list), std::invalid_argument);  // no own key
}

}  // namespace
}  // namespace tensortier
