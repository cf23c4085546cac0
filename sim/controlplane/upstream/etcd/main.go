// Command etcd is the vanilla upstream etcd server, built from the published
// go.etcd.io/etcd/server/v3 module at the version pinned in ../versions.env.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
