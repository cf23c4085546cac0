// Command kube-apiserver is the vanilla upstream kube-apiserver, built from the
// published k8s.io/kubernetes module at the version pinned in ../../../versions.env.
// It mirrors cmd/kube-apiserver/apiserver.go upstream and adds nothing.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	command := app.NewAPIServerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
