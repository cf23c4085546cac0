#include "sim/kube/transport.h"

#include <optional>

namespace cpscale::kube {
namespace {

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::string_view toString(TransportOutcome o) {
  switch (o) {
    case TransportOutcome::kOk: return "ok";
    case TransportOutcome::kConnectFailed: return "connect failed";
    case TransportOutcome::kTlsFailed: return "TLS failed";
    case TransportOutcome::kTimeout: return "timeout";
    case TransportOutcome::kAborted: return "aborted";
    case TransportOutcome::kProtocolError: return "protocol error";
  }
  return "unknown";
}

std::optional<std::string_view> HttpResponse::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (equalsIgnoreCase(h.name, name)) return std::string_view(h.value);
  }
  return std::nullopt;
}

HttpResponse roundTrip(Transport& transport, HttpRequest req) {
  std::optional<HttpResponse> result;
  transport.submit(std::move(req), [&result](HttpResponse r) { result = std::move(r); });
  // The wait is a cap per poll, not a deadline: the request's own timeout ends it.
  while (!result) transport.poll(std::chrono::milliseconds(100));
  return std::move(*result);
}

}  // namespace cpscale::kube
