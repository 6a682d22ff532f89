//go:build tools

// Package tools pins the kube-apiserver main package in this module's
// go.mod and go.sum; the binary is built with
// `go build k8s.io/kubernetes/cmd/kube-apiserver`.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
