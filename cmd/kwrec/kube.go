package main

import (
	"errors"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	cliresource "k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"
)

// kubeFlags are the flags with which kwrec reaches a cluster, kubectl's own:
// the connection flags of cli-runtime's [genericclioptions.ConfigFlags]
// (--kubeconfig, --context, --cluster, --user, --server, --token, --as,
// --certificate-authority, --insecure-skip-tls-verify, --request-timeout,
// --cache-dir, -n and the rest, with exec credential plugins and kubectl's
// discovery cache), and kubectl get's -A.
type kubeFlags struct {
	conn          *genericclioptions.ConfigFlags
	allNamespaces bool
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	// Persistent, as kubectl's: one client config, discovery client and
	// RESTMapper for the whole command.
	k.conn = genericclioptions.NewConfigFlags(true)
	k.conn.AddFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&k.allNamespaces, "all-namespaces", "A", false, "record namespaced resources in all namespaces (-n and the context's namespace are ignored)")
}

// config returns the client config the flags and the kubeconfig (if any)
// make, as kubectl's, except that with neither a kubeconfig nor --server
// (nor in a pod) it is an error where kubectl would try localhost:8080, a
// default client-go keeps only for compatibility.
func (k *kubeFlags) config() (*rest.Config, error) {
	loader := k.conn.ToRawKubeConfigLoader()
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, err
	}
	if raw, err := loader.RawConfig(); err == nil && len(raw.Clusters) == 0 && *k.conn.APIServer == "" {
		if _, err := rest.InClusterConfig(); err != nil {
			return nil, errors.New("no cluster to record from: no kubeconfig ($KUBECONFIG, ~/.kube/config or --kubeconfig) and no --server")
		}
	}
	return cfg, nil
}

// namespace returns the namespace namespaced resources are recorded in, as
// kubectl get chooses it: "" (all namespaces) with -A, else -n, else the
// kubeconfig context's, else default.
func (k *kubeFlags) namespace() (string, error) {
	if k.allNamespaces {
		return "", nil
	}
	ns, _, err := k.conn.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// resource is a resolved kubectl resource name.
type resource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// resolveResources resolves resource names as kubectl get does, through
// the discovery and RESTMapper of getter: plurals, singulars, kinds, short
// names, categories (all), resource.group, resource.version.group
// (configmaps.v1.), kind.version.group, and comma lists of them (cm,deploy).
// Each resource comes once, in the order first named. An unknown name is
// kubectl's error (the server doesn't have a resource type "frobs").
func resolveResources(getter cliresource.RESTClientGetter, args []string) ([]resource, error) {
	var out []resource
	seen := map[schema.GroupVersionResource]bool{}
	for _, arg := range args {
		// Categories first, as kubectl get expands `all`; the expander is
		// best effort and leaves a name it does not know as it is.
		names := cliresource.SplitResourceArgument(cliresource.NewBuilder(getter).ReplaceAliases(arg))
		for _, name := range names {
			m, err := mappingFor(getter, name)
			if err != nil {
				return nil, err
			}
			if seen[m.Resource] {
				continue
			}
			seen[m.Resource] = true
			out = append(out, resource{gvr: m.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace})
		}
	}
	return out, nil
}

// mappingFor resolves one resource name with kubectl's own rules: those of
// cli-runtime's resource.Builder, which it does not export but applies to
// the types of a selector. The selector is never visited, so nothing is
// listed.
func mappingFor(getter cliresource.RESTClientGetter, name string) (*meta.RESTMapping, error) {
	return cliresource.NewBuilder(getter).Unstructured().ResourceTypes(name).SelectAllParam(true).Do().ResourceMapping()
}
