#include "sim/run/host_info.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "reports/format.h"

namespace cpscale::run {

std::string hostName() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "";
}

std::string machineDescription() {
  const std::string model = cpuModel();
  const double mem = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  std::ostringstream os;
  os << std::thread::hardware_concurrency() << " CPUs";
  if (!model.empty()) os << " (" << model << ")";
  os << ", " << reports::formatValue(mem, "bytes");
  return os.str();
}

}  // namespace cpscale::run
