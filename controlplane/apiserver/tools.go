//go:build tools

// Package tools pins the kube-apiserver and kube-controller-manager main
// packages in this module's go.mod and go.sum; the binaries are built with
// `go build k8s.io/kubernetes/cmd/kube-apiserver` (and kube-controller-manager).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
