package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeFlags are kubectl's connection flags.
type kubeFlags struct {
	kubeconfig, context, namespace string
	allNamespaces                  bool
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&k.context, "context", "", "the kubeconfig context to use")
	f.StringVarP(&k.namespace, "namespace", "n", "", "the namespace (default: the context's, else default)")
	f.BoolVarP(&k.allNamespaces, "all-namespaces", "A", false, "record across all namespaces")
}

// config loads the client config and the effective namespace as kubectl does.
func (k *kubeFlags) config() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.kubeconfig != "" {
		rules.ExplicitPath = k.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %v", err)
	}
	ns := k.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	return cfg, ns, nil
}

// resource is a resolved kubectl resource name.
type resource struct {
	arg        string
	gvr        schema.GroupVersionResource
	namespaced bool
}

// resolveResources resolves kubectl resource names and short names
// (configmaps, cm, po, deploy, deployments.apps, CRD plurals) through
// discovery.
func resolveResources(cfg *rest.Config, args []string) ([]resource, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	var out []resource
	for _, arg := range args {
		for _, name := range strings.Split(arg, ",") {
			gr := schema.ParseGroupResource(strings.ToLower(name))
			gvr, err := mapper.ResourceFor(gr.WithVersion(""))
			if err != nil {
				return nil, fmt.Errorf("the server doesn't have a resource type %q", name)
			}
			gvk, err := mapper.KindFor(gvr)
			if err != nil {
				return nil, fmt.Errorf("resource %q: %v", name, err)
			}
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return nil, fmt.Errorf("resource %q: %v", name, err)
			}
			out = append(out, resource{arg: name, gvr: gvr, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace})
		}
	}
	return out, nil
}
