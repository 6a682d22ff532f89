package replay_test

import (
	"slices"
	"testing"

	"github.com/kwrec/kwrec/replay"
	"k8s.io/client-go/discovery"
)

func TestDiscoveryIsServedInProcessAsTheAPIServerServesIt(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		// The fixture recorded no discovery: the API server's own for the
		// built-in resources answers, with short names and categories.
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
		dc, err := discovery.NewDiscoveryClientForConfig(r.Config())
		if err != nil {
			t.Fatal(err)
		}
		v, err := dc.ServerVersion()
		if err != nil || v.GitVersion != "v1.37.2" {
			t.Errorf("ServerVersion = %v, %v; want the cassette's v1.37.2", v, err)
		}
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil {
			t.Fatal(err)
		}
		var cm, pods, deploy bool
		for _, l := range lists {
			for _, res := range l.APIResources {
				switch {
				case l.GroupVersion == "v1" && res.Name == "configmaps":
					cm = slices.Contains(res.ShortNames, "cm") && slices.Contains(res.Verbs, "watch")
				case l.GroupVersion == "v1" && res.Name == "pods":
					pods = slices.Contains(res.Categories, "all")
				case l.GroupVersion == "apps/v1" && res.Name == "deployments":
					deploy = slices.Contains(res.ShortNames, "deploy")
				}
			}
		}
		if !cm || !pods || !deploy {
			t.Errorf("discovery: configmaps with short name cm and verb watch %v, pods in category all %v, deployments with short name deploy %v", cm, pods, deploy)
		}
	})
}
