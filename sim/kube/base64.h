// Standard (RFC 4648) base64, as used by kubeconfig "*-data" fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cpscale::kube {

// Whitespace (line breaks in long values) is ignored; anything else that is not
// base64 makes it return nullopt.
std::optional<std::string> base64Decode(std::string_view in);
std::string base64Encode(std::string_view in);

}  // namespace cpscale::kube
