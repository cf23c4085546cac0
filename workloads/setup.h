// Synchronous steps a workload's prepare() takes before the clock starts: namespaces
// and custom resource definitions, labelled with the run so cleanup finds them.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/engine/clock.h"
#include "sim/kube/api_client.h"

namespace cpscale::workloads {

// Creates the namespace (AlreadyExists is fine) and, when `defaultServiceAccount`,
// its "default" ServiceAccount, which the pod admission plugin requires and which
// nobody else creates on a plane without kube-controller-manager. Throws
// UnavailableError when the server refuses.
void ensureNamespace(kube::ApiClient& api, const std::string& name, const std::string& runId,
                     const std::string& workload, bool defaultServiceAccount = false);

// Creates `crd` (a filled CRD template; labels are added) unless it exists, then waits
// up to `timeout` until it is Established and a LIST of its resource succeeds (the
// apiserver serves it). Returns true when this call created it.
// Throws UnavailableError when creation is refused or it never becomes Established.
bool installCrd(kube::ApiClient& api, engine::Clock& clock, nlohmann::json crd, const std::string& runId,
                const std::string& workload, engine::Duration timeout = std::chrono::seconds(60));

}  // namespace cpscale::workloads
