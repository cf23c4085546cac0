#include "sim/run/target_check.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <optional>

namespace cpscale::run {
namespace {

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

// The part, or nullopt when the URL has none.
std::optional<std::string> part(CURLU* url, CURLUPart which) {
  char* text = nullptr;
  if (curl_url_get(url, which, &text, 0) != CURLUE_OK || text == nullptr) return std::nullopt;
  std::string out = text;
  curl_free(text);
  return out;
}

bool loopbackV4(const in_addr& a) { return (ntohl(a.s_addr) >> 24) == 127; }

bool loopbackV6(const in6_addr& a) {
  if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
  if (IN6_IS_ADDR_V4MAPPED(&a)) return a.s6_addr[12] == 127;
  return false;
}

// For a numeric address, whether it is loopback; nullopt when `host` is a name.
std::optional<bool> numericLoopback(const std::string& host) {
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return loopbackV4(v4);
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return loopbackV6(v6);
  return std::nullopt;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::vector<std::string> resolveHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::vector<std::string> out;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {0};
    if (ai->ai_family == AF_INET)
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr, buf, sizeof buf);
    else if (ai->ai_family == AF_INET6)
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr, buf, sizeof buf);
    else
      continue;
    out.emplace_back(buf);
  }
  ::freeaddrinfo(res);
  return out;
}

bool isLoopbackServer(const std::string& serverUrl) { return isLoopbackServer(serverUrl, resolveHost); }

bool isLoopbackServer(const std::string& serverUrl, const HostResolver& resolve) {
  std::unique_ptr<CURLU, UrlDeleter> url(curl_url());
  if (!url || curl_url_set(url.get(), CURLUPART_URL, serverUrl.c_str(), 0) != CURLUE_OK) return false;
  auto scheme = part(url.get(), CURLUPART_SCHEME);
  if (!scheme || (lower(*scheme) != "https" && lower(*scheme) != "http")) return false;
  // "https://127.0.0.1@evil.example" goes to evil.example; a query or fragment in a
  // server URL is a trick too (other parsers may read the host differently).
  for (CURLUPart p :
       {CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_OPTIONS, CURLUPART_QUERY, CURLUPART_FRAGMENT, CURLUPART_ZONEID})
    if (part(url.get(), p)) return false;
  auto hostPart = part(url.get(), CURLUPART_HOST);
  if (!hostPart || hostPart->empty()) return false;
  std::string host = *hostPart;
  // libcurl has already turned 0x7f000001, 2130706433 and 127.1 into 127.0.0.1: the
  // address it will connect to. IPv6 literals come bracketed.
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    host = host.substr(1, host.size() - 2);
    return numericLoopback(host).value_or(false);
  }
  if (auto numeric = numericLoopback(host)) return *numeric;
  std::string name = lower(host);
  if (name != "localhost" && name != "localhost.") return false;
  // The name exactly as the transport will resolve it ("localhost." is asked of DNS).
  std::vector<std::string> addrs = resolve(name);
  if (addrs.empty()) return false;
  return std::all_of(addrs.begin(), addrs.end(),
                     [](const std::string& a) { return numericLoopback(a).value_or(false); });
}

std::vector<std::string> apiserverEndpoints(kube::ApiClient& api) {
  std::vector<std::string> out;
  kube::ApiResult ep = api.get(kube::ResourceRef({"", "v1", "endpoints", true}).in("default").named("kubernetes"));
  if (!ep.ok() || !ep.body.is_object()) return out;
  for (const auto& subset : ep.body.value("subsets", nlohmann::json::array()))
    for (const auto& addr : subset.value("addresses", nlohmann::json::array()))
      for (const auto& port : subset.value("ports", nlohmann::json::array())) {
        std::string ip = addr.value("ip", "?");
        if (ip.find(':') != std::string::npos) ip = "[" + ip + "]";
        out.push_back(ip + ":" + std::to_string(port.value("port", 0)));
      }
  return out;
}

}  // namespace cpscale::run
