// One function per subcommand; each parses its own options and returns the process
// exit code. Errors of the documented kinds are thrown and mapped to exit codes by
// main (ConfigError -> 2, UnavailableError -> 3).
#pragma once

#include <string>
#include <vector>

namespace cpscale::cli {

using Args = std::vector<std::string>;  // argv without the program and command names

int up(const Args& args);
int down(const Args& args);
int status(const Args& args);
int version(const Args& args);
int check(const Args& args);
int capture(const Args& args);
int run(const Args& args);
int report(const Args& args);
int compare(const Args& args);
int merge(const Args& args);
int collect(const Args& args);
int job(const Args& args);
int cleanup(const Args& args);
int capacity(const Args& args);
int classify(const Args& args);
int calibrate(const Args& args);
int simulate(const Args& args);

}  // namespace cpscale::cli
