// Package kubeconfig builds the one-context kubeconfigs kwrec hands to
// clients: the recording proxy's and the replay server's.
package kubeconfig

import (
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// For returns a kubeconfig whose only context, name, points at server
// in namespace default, trusting ca (nil: the system's roots) and
// presenting token ("" for none).
func For(name, server string, ca []byte, token string) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	return kc
}
