// Command etcd is etcd's own server main, built at the version pinned in
// go.mod, so the test control plane needs nothing but the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
