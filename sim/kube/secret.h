// A credential (bearer token, private key) that must never reach a log, an error
// message or a report. Printing it shows "<redacted>"; the bytes are only reachable
// through reveal(), which makes every place that hands them on easy to audit.
#pragma once

#include <ostream>
#include <string>
#include <utility>

namespace cpscale::kube {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(const Secret&) = default;
  Secret(Secret&&) noexcept = default;
  Secret& operator=(const Secret&) = default;
  Secret& operator=(Secret&& other) noexcept;
  // Overwrites the bytes on destruction: best effort against later memory dumps
  // (copies inside the TLS library are out of reach).
  ~Secret();

  bool empty() const { return value_.empty(); }
  std::size_t size() const { return value_.size(); }
  // The only way to the bytes: for handing them to the TLS library or an auth header.
  const std::string& reveal() const { return value_; }

  friend bool operator==(const Secret& a, const Secret& b) { return a.value_ == b.value_; }
  friend std::ostream& operator<<(std::ostream& os, const Secret& s) {
    return os << (s.empty() ? "<empty>" : "<redacted>");
  }

 private:
  std::string value_;
};

}  // namespace cpscale::kube
