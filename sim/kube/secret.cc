#include "sim/kube/secret.h"

#include <openssl/crypto.h>

namespace cpscale::kube {

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    OPENSSL_cleanse(value_.data(), value_.size());
    value_ = std::move(other.value_);
  }
  return *this;
}

Secret::~Secret() { OPENSSL_cleanse(value_.data(), value_.size()); }

}  // namespace cpscale::kube
