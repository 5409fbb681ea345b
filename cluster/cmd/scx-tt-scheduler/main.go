// Command scx-tt-scheduler is the upstream kube-scheduler with the
// out-of-tree plugin ScxTT compiled in. It takes every kube-scheduler flag;
// enable the plugin in a KubeSchedulerConfiguration (see docs/cluster.md).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"scx-tt/cluster/plugin"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	os.Exit(cli.Run(cmd))
}
