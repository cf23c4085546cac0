// loadKubeconfig on arbitrary files, the way each of kubectl's lookups reaches them.
// The input is split into files at lines that are exactly "#file" (a YAML comment);
// one file is loaded as --kubeconfig, or from ~/.kube/config when the input starts with
// "#home"; several are merged as $KUBECONFIG (with a missing file among them, which is
// skipped). A first line "#context NAME" is given as --context. Files a kubeconfig
// names (certificate-authority, client-certificate, client-key, tokenFile) resolve in
// the sandbox, where ca.crt, client.crt, client.key and token exist.
//
// ConfigError is the documented outcome for bad input; anything else escaping, a
// crash, a sanitizer report or a hang is a finding. Neither a message nor describe()
// may show a credential: the input's tokens and client-key-data values are checked
// against every message.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/error.h"
#include "sim/kube/kubeconfig.h"
#include "test/fuzz/fuzz_support.h"

namespace {

std::vector<std::string> splitFiles(std::string_view text) {
  std::vector<std::string> files{""};
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl == std::string_view::npos ? text.size() : nl + 1);
    text.remove_prefix(line.size());
    if (line == "#file\n" || line == "#file") {
      if (files.size() < 4) files.emplace_back();
      continue;
    }
    files.back().append(line);
  }
  return files;
}

// Credentials the input carries (values of token and client-key-data), long enough and
// unlike any other scalar of the file that a message could quote for a good reason.
void collectSecrets(const YAML::Node& n, std::vector<std::string>& secrets, std::vector<std::string>& others,
                    int depth = 0) {
  if (depth > 64 || !n.IsDefined() || n.IsNull()) return;
  if (n.IsScalar()) {
    others.push_back(n.Scalar());
  } else if (n.IsSequence()) {
    for (const auto& item : n) collectSecrets(item, secrets, others, depth + 1);
  } else if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if ((key == "token" || key == "client-key-data") && kv.second.IsScalar()) {
        secrets.push_back(kv.second.Scalar());
      } else {
        collectSecrets(kv.second, secrets, others, depth + 1);
      }
      collectSecrets(kv.first, secrets, others, depth + 1);
    }
  }
}

std::vector<std::string> secretsOf(const std::vector<std::string>& files) {
  std::vector<std::string> secrets, others, out;
  for (const auto& f : files) {
    // Only a file that can spell a credential's key needs parsing for it.
    if (f.find("token") == std::string::npos && f.find("client-key-data") == std::string::npos &&
        f.find('\\') == std::string::npos)
      continue;
    try {
      collectSecrets(YAML::Load(f), secrets, others);
    } catch (const YAML::Exception&) {
    }
  }
  for (const auto& s : secrets) {
    // Only what looks like a credential: 16 or more characters with upper case, lower
    // case and digits and no space, quote, colon or slash. Anything shorter or plainer
    // is found in the messages' own words (the fuzzer spells them out: a token
    // "t set, and no --context g" is in "current-context: not set, and no --context
    // given"), in the sandbox's paths or in the field paths.
    bool upper = false, lower = false, digit = false, plain = true;
    for (unsigned char c : s) {
      upper = upper || std::isupper(c);
      lower = lower || std::islower(c);
      digit = digit || std::isdigit(c);
      plain = plain && !std::isspace(c) && c != '\'' && c != '"' && c != ':' && c != '/';
    }
    if (s.size() < 16 || !upper || !lower || !digit || !plain) continue;
    bool quoted = false;
    for (const auto& o : others)
      quoted = quoted || o.find(s) != std::string::npos || (o.size() >= 4 && s.find(o) != std::string::npos);
    if (!quoted) out.push_back(s);
  }
  return out;
}

void checkNoSecret(const std::string& message, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) CPSCALE_FUZZ_CHECK(message.find(s) == std::string::npos, "credential in: " + message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const cpscale::fuzz::Sandbox sandbox;
  static const bool seeded = [] {
    const auto& s = sandbox;
    s.write("ca.crt", "-----BEGIN CERTIFICATE-----\nQ0EgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n");
    s.write("client.crt", "-----BEGIN CERTIFICATE-----\nY2xpZW50IGNlcnRpZmljYXRl\n-----END CERTIFICATE-----\n");
    s.write("client.key", "-----BEGIN PRIVATE KEY-----\nY2xpZW50IGtleQ==\n-----END PRIVATE KEY-----\n");
    s.write("token", "c2VydmljZS1hY2NvdW50LXRva2Vu\n");
    s.write("empty-token", "\n");
    return true;
  }();
  (void)seeded;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool home = text.substr(0, 5) == "#home";
  std::string context;
  if (text.substr(0, 9) == "#context ") {
    std::size_t nl = text.find('\n');
    context = std::string(text.substr(9, nl == std::string_view::npos ? std::string_view::npos : nl - 9));
  }
  const std::vector<std::string> files = splitFiles(text);
  const std::vector<std::filesystem::path> inSandbox{sandbox.dir()};
  for (const auto& f : files)
    if (cpscale::fuzz::yamlNamesOutsideFiles(f, inSandbox, inSandbox)) return -1;

  cpscale::kube::LoadOptions options;
  options.context = context;
  if (files.size() == 1 && home) {
    sandbox.write("home/.kube/config", files[0]);
    options.homeDir = (sandbox.dir() / "home").string();
  } else if (files.size() == 1) {
    options.explicitPath = sandbox.write("config", files[0]).string();
  } else {
    std::string list;
    for (std::size_t i = 0; i < files.size(); ++i) {
      list += sandbox.write("config-" + std::to_string(i), files[i]).string() + ":";
      if (i == 0) list += (sandbox.dir() / "missing-config").string() + ":";
    }
    options.kubeconfigEnv = list;
  }

  std::vector<std::string> secrets = secretsOf(files);
  // Messages name the file, whose path is the sandbox's, and quote the --context given.
  std::erase_if(secrets, [&](const std::string& s) {
    return sandbox.dir().string().find(s) != std::string::npos || context.find(s) != std::string::npos;
  });
  try {
    cpscale::kube::RestConfig rc = cpscale::kube::loadKubeconfig(options);
    CPSCALE_FUZZ_CHECK(rc.server.rfind("https://", 0) == 0 || rc.server.rfind("http://", 0) == 0, rc.server);
    CPSCALE_FUZZ_CHECK(!(rc.insecureSkipTlsVerify && !rc.caPem.empty()), "insecure with a CA");
    CPSCALE_FUZZ_CHECK(rc.clientCertPem.empty() == rc.clientKeyPem.empty(), "certificate without key or key without");
    checkNoSecret(cpscale::kube::describe(rc), secrets);
  } catch (const cpscale::ConfigError& e) {
    checkNoSecret(e.what(), secrets);
  }
  return 0;
}
