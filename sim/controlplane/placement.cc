#include "sim/controlplane/placement.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "sim/common/error.h"

namespace cpscale::controlplane {

const std::vector<int>* Placement::of(std::string_view role) const {
  auto it = cpus.find(std::string(role));
  return it == cpus.end() ? nullptr : &it->second;
}

std::string cpuListText(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::string Placement::text() const {
  std::string out;
  for (std::string_view role : kPlacementRoles)
    if (const auto* c = of(role)) out += (out.empty() ? "" : " ") + std::string(role) + "=" + cpuListText(*c);
  return out;
}

std::vector<int> parseCpuList(std::string_view text, int online, const std::string& where, const std::string& field) {
  std::set<int> out;
  auto number = [&](std::string_view s) {
    int v = -1;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0)
      throw ConfigError(where, field, "'" + std::string(text) + "' is not a CPU list (e.g. 0, 1-3, 0,2)");
    if (v >= online)
      throw ConfigError(where, field,
                        "CPU " + std::to_string(v) + " is not online (this machine has " + std::to_string(online) +
                            ": 0-" + std::to_string(online - 1) + ")");
    return v;
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string_view item =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      out.insert(number(item));
    } else {
      const int lo = number(item.substr(0, dash)), hi = number(item.substr(dash + 1));
      if (hi < lo) throw ConfigError(where, field, "'" + std::string(item) + "' is an empty range");
      for (int c = lo; c <= hi; ++c) out.insert(c);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return {out.begin(), out.end()};
}

Placement isolatedPlacement(int online) {
  Placement p;
  if (online < 2) return p;
  const int last = online - 1;
  p.cpus["kube-apiserver"] = {last};
  const int etcd = online >= 3 ? last - 1 : 0;
  p.cpus["etcd"] = {etcd};
  for (const char* role : {"kube-controller-manager", "kube-scheduler", "generator"}) p.cpus[role] = {0};
  return p;
}

Placement parsePlacement(const std::vector<std::string>& entries, int online) {
  Placement p;
  for (const std::string& e : entries) {
    if (e == "isolated") {
      if (entries.size() > 1) throw ConfigError("command line", "--pin", "'isolated' stands alone");
      if (online < 2)
        throw ConfigError("command line", "--pin", "'isolated' needs at least 2 CPUs; this machine has 1");
      return isolatedPlacement(online);
    }
    const std::size_t eq = e.find('=');
    if (eq == std::string::npos)
      throw ConfigError("command line", "--pin", "'" + e + "' is not ROLE=CPUS (e.g. kube-apiserver=1) or 'isolated'");
    const std::string role = e.substr(0, eq);
    if (std::find(std::begin(kPlacementRoles), std::end(kPlacementRoles), role) == std::end(kPlacementRoles))
      throw ConfigError(
          "command line", "--pin",
          "unknown role '" + role + "' (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, generator)");
    if (p.cpus.count(role)) throw ConfigError("command line", "--pin", "role '" + role + "' is pinned twice");
    p.cpus[role] = parseCpuList(std::string_view(e).substr(eq + 1), online, "command line", "--pin");
  }
  return p;
}

int cpusOnline() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace cpscale::controlplane
