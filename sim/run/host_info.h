// The machine a run or an index was measured on, as results record it.
#pragma once

#include <string>

namespace cpscale::run {

std::string hostName();
// The CPU's model name from /proc/cpuinfo ("AMD EPYC 7B13"), or "".
std::string cpuModel();
// "2 CPUs (AMD EPYC 7B13), 24 GiB": where an index was measured, in words.
std::string machineDescription();

}  // namespace cpscale::run
