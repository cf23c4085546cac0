// Command kube-scheduler is the vanilla upstream kube-scheduler, built from the
// published k8s.io/kubernetes module at the version pinned in ../../../versions.env.
// It mirrors cmd/kube-scheduler/scheduler.go upstream and adds nothing.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	command := app.NewSchedulerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
