// A throwaway certificate authority and server certificates for the TLS
// tests, made by the `openssl` command in a temporary directory (so the
// certificates come from an implementation independent of the code under
// test, and none is checked in to expire). Test-only.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace swiftlet::http::testing {

// A command's exit status (-1: it could not be run) and its stdout and
// stderr together.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// Runs `command` through /bin/sh.
CommandResult RunCommand(const std::string& command);

struct ServerCertFiles {
  std::string cert;  // PEM: the leaf certificate.
  std::string key;   // PEM: its unencrypted EC key.
};

// A directory holding a CA (ca.pem, ca.key); removed with the object.
class TestPki {
 public:
  // FailedPrecondition naming the missing `openssl` command (scripts/setup.sh
  // installs it), or the command that failed and its output.
  static absl::StatusOr<TestPki> Create();

  TestPki(TestPki&& other) noexcept;
  TestPki& operator=(TestPki&&) = delete;
  ~TestPki();

  const std::string& dir() const { return dir_; }
  std::string ca_file() const { return dir_ + "/ca.pem"; }

  // A certificate signed by this CA for DNS:localhost and IP:127.0.0.1,
  // with serial number `serial_hex` (hex digits, as `openssl x509 -serial`
  // prints it), in files named after `name`.
  absl::StatusOr<ServerCertFiles> IssueServerCert(const std::string& name,
                                                  const std::string& serial_hex) const;

 private:
  explicit TestPki(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace swiftlet::http::testing
