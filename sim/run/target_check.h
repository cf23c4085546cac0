// What cpscale learns of a user's cluster before sending it anything but reads: whether
// a server URL points at this machine's loopback interface, where cpscale may send
// load or delete objects without the user confirming (--yes), and the kube-apiserver
// endpoints behind it. The loopback check errs towards "not loopback": a wrong "no"
// only asks for --yes, a wrong "yes" loads a real cluster.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/kube/api_client.h"

namespace cpscale::run {

// Resolves a host name to numeric addresses ("127.0.0.1", "::1"); empty when it does
// not resolve. The default uses getaddrinfo.
using HostResolver = std::function<std::vector<std::string>(const std::string& host)>;

// True when `serverUrl` is an http(s) URL, as libcurl (the transport) parses it, with
// no userinfo, query or fragment, whose host is an address in 127.0.0.0/8, ::1 or
// ::ffff:127.0.0.0/104, or the name `localhost` when every address it resolves to is
// one of those. Any other name is not loopback, even if it resolves there now (DNS
// answers can change between this check and the connection).
bool isLoopbackServer(const std::string& serverUrl);
bool isLoopbackServer(const std::string& serverUrl, const HostResolver& resolve);

// The default resolver (getaddrinfo, numeric results).
std::vector<std::string> resolveHost(const std::string& host);

// The kube-apiserver replicas behind the `kubernetes` Service in `default`, as
// "host:port" (an IPv6 host in brackets), read with one GET of its Endpoints; empty
// when they cannot be read.
std::vector<std::string> apiserverEndpoints(kube::ApiClient& api);

}  // namespace cpscale::run
