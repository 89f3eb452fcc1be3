#include "test_pki.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "core/status.h"
#include "core/str_cat.h"

namespace swiftlet::http::testing {
namespace {

// P-256 keys: made in milliseconds, unlike RSA.
constexpr char kKeyArgs[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

absl::Status Run(const std::string& command) {
  CommandResult r = RunCommand(command);
  if (r.exit_code == 0) return absl::OkStatus();
  return absl::InternalError(StrCat("`", command, "` failed (", r.exit_code, "):\n", r.output));
}

}  // namespace

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  int status = pclose(pipe);
  result.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

absl::StatusOr<TestPki> TestPki::Create() {
  if (RunCommand("command -v openssl").exit_code != 0) {
    return absl::FailedPreconditionError(
        "the `openssl` command is missing: the TLS tests make their certificates with it "
        "(scripts/setup.sh installs the openssl package)");
  }
  const char* tmp = getenv("TMPDIR");
  std::string pattern = StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/swiftlet-pki-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(StrCat("mkdtemp ", pattern, " failed"));
  }
  TestPki pki(pattern);
  const std::string& d = pki.dir_;
  SWIFTLET_RETURN_IF_ERROR(Run(StrCat(
      "openssl req -x509 ", kKeyArgs, " -keyout ", d, "/ca.key -out ", d,
      "/ca.pem -days 2 -subj /CN=swiftlet-test-ca"
      " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign")));
  std::ofstream ext(d + "/server.ext");
  ext << "basicConstraints=CA:FALSE\n"
         "keyUsage=critical,digitalSignature\n"
         "extendedKeyUsage=serverAuth\n"
         "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  if (!ext.good()) return absl::InternalError(StrCat("cannot write ", d, "/server.ext"));
  return pki;
}

TestPki::TestPki(TestPki&& other) noexcept : dir_(std::move(other.dir_)) { other.dir_.clear(); }

TestPki::~TestPki() {
  if (dir_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

absl::StatusOr<ServerCertFiles> TestPki::IssueServerCert(const std::string& name,
                                                         const std::string& serial_hex) const {
  const std::string base = StrCat(dir_, "/", name);
  ServerCertFiles files{base + ".pem", base + ".key"};
  SWIFTLET_RETURN_IF_ERROR(Run(StrCat("openssl req ", kKeyArgs, " -keyout ", files.key, " -out ",
                                      base, ".csr -subj /CN=localhost")));
  SWIFTLET_RETURN_IF_ERROR(Run(StrCat("openssl x509 -req -in ", base, ".csr -CA ", dir_,
                                      "/ca.pem -CAkey ", dir_, "/ca.key -set_serial 0x", serial_hex,
                                      " -days 2 -extfile ", dir_, "/server.ext -out ", files.cert)));
  return files;
}

}  // namespace swiftlet::http::testing
