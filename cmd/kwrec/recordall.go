package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// leftOutByDefault are what record --all leaves out unless --include names
// them: Events (core and events.k8s.io) and Leases (coordination.k8s.io).
// Both churn without end (every node's heartbeat renews a Lease every 10s,
// leader elections every 2s), and would be most of a flight recording.
var leftOutByDefault = []schema.GroupResource{
	{Resource: "events"},
	{Group: "events.k8s.io", Resource: "events"},
	{Group: "coordination.k8s.io", Resource: "leases"},
}

// allSelection is what record --all makes of the flags that choose its
// resources.
type allSelection struct {
	// namespaced keeps only namespaced resources (-n NS).
	namespaced bool
	// include brings back what [leftOutByDefault] holds (--include).
	include []string
	// exclude drops resources (--exclude); it wins over include.
	exclude []string
}

// selectAll picks, from the preferred version of each group that
// discovery lists, every resource record --all records: those with both
// the list and the watch verb, subresources (names with '/') excluded,
// only namespaced ones when sel.namespaced, none that sel.exclude names,
// and of [leftOutByDefault] only those sel.include names. They come
// sorted by group (core first), then resource. warnings say which
// --include and --exclude names matched nothing (a typo would otherwise
// go unseen); see [nameMatches] for what a name matches.
func selectAll(lists []*metav1.APIResourceList, sel allSelection) (res []resource, warnings []string) {
	includeUsed := make([]bool, len(sel.include))
	excludeUsed := make([]bool, len(sel.exclude))
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			excluded := false
			for i, name := range sel.exclude {
				if nameMatches(name, gv.Group, r) {
					excludeUsed[i], excluded = true, true
				}
			}
			leftOut := slices.Contains(leftOutByDefault, schema.GroupResource{Group: gv.Group, Resource: r.Name})
			if leftOut {
				for i, name := range sel.include {
					if nameMatches(name, gv.Group, r) {
						includeUsed[i], leftOut = true, false
					}
				}
			}
			if excluded || leftOut || (sel.namespaced && !r.Namespaced) ||
				!slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			res = append(res, resource{gvr: gv.WithResource(r.Name), namespaced: r.Namespaced})
		}
	}
	sort.Slice(res, func(i, j int) bool {
		a, b := res[i].gvr, res[j].gvr
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Resource < b.Resource
	})
	for i, name := range sel.include {
		if !includeUsed[i] {
			warnings = append(warnings, fmt.Sprintf("--include %s matches nothing --all leaves out (events, leases)", name))
		}
	}
	for i, name := range sel.exclude {
		if !excludeUsed[i] {
			warnings = append(warnings, fmt.Sprintf("--exclude %s matches no resource the server lists", name))
		}
	}
	return res, warnings
}

// nameMatches reports whether an --include or --exclude name means the
// resource r of group. Case is ignored. A name matches
//
//   - a group: its name (apps, coordination.k8s.io), "core" for the core
//     group: every resource of it;
//   - a resource in every group: its plural, singular, kind or a short
//     name (events, event, Event, ev);
//   - a resource in one group: one of those, a dot and the group
//     (events.events.k8s.io, leases.coordination.k8s.io, deploy.apps,
//     configmaps.core).
func nameMatches(name, group string, r metav1.APIResource) bool {
	n := strings.ToLower(name)
	if n == group || (n == "core" && group == "") {
		return true
	}
	res, g, dotted := strings.Cut(n, ".")
	if g == "core" {
		g = ""
	}
	if dotted && g != group {
		return false
	}
	return res == r.Name || res == r.SingularName || res == strings.ToLower(r.Kind) || slices.Contains(r.ShortNames, res)
}

// allNamespace is the namespace record --all records namespaced
// resources in: -n's, else every namespace (""), whatever the kubeconfig
// context names: a recording of the whole cluster is what --all is for.
func allNamespace(k *kubeFlags) string {
	if k.allNamespaces || k.conn.Namespace == nil {
		return ""
	}
	return *k.conn.Namespace
}

// discoverAll lists the server's preferred resources for record --all. A
// group whose discovery fails (an aggregated API whose service is down)
// is left out and named in skipped; every other error is returned.
func discoverAll(ctx context.Context, cfg *rest.Config) (lists []*metav1.APIResourceList, skipped []string, err error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	lists, err = discovery.ServerPreferredResourcesWithContext(ctx, dc)
	var gdf *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &gdf) {
		for gv, gerr := range gdf.Groups {
			skipped = append(skipped, fmt.Sprintf("%s: discovery failed: %v", gv, gerr))
		}
		sort.Strings(skipped)
		return lists, skipped, nil
	}
	return lists, nil, err
}

// probeAll asks the server, for each resource, the list (of one object)
// and the watch that recording it makes, with the same namespace and
// selectors, and keeps those it answers. The rest are skipped: each is
// named in skipped as "RESOURCE: REASON" ("secrets: forbidden (list)").
//
// Asking is the only exact test. A SelfSubjectAccessReview per verb would
// need the right to create reviews, answers for the authorizers only (not
// for a field selector a resource refuses with 400, nor for an aggregated
// API that is down), and may say "no opinion" where a webhook or Node
// authorizer would allow. The probes go over cfg unrecorded, so the
// cassette holds only the recording; the watch is closed as soon as its
// response head arrives, from the list's resourceVersion (no initial
// events). A failure that is not an API status (no connection) is
// returned: it is the cluster's, not one resource's.
func probeAll(ctx context.Context, cfg *rest.Config, res []resource, ns, labelSel, fieldSel string) (ok []resource, skipped []string, err error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 50, 100 // kubectl's; a cluster has dozens of resources
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		return nil, nil, err
	}
	reasons := make([]string, len(res))
	errs := make([]error, len(res))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, r := range res {
		tns := ""
		if r.namespaced {
			tns = ns
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			reasons[i], errs[i] = probe(ctx, dyn.Resource(r.gvr).Namespace(tns), labelSel, fieldSel)
		}()
	}
	wg.Wait()
	for i, r := range res {
		switch {
		case errs[i] != nil:
			err = errors.Join(err, fmt.Errorf("%s: %w", resourceName(r.gvr), errs[i]))
		case reasons[i] != "":
			skipped = append(skipped, resourceName(r.gvr)+": "+reasons[i])
		default:
			ok = append(ok, r)
		}
	}
	return ok, skipped, err
}

// probe makes one resource's list and watch; it returns why the server
// refused them, "" when it did not, or the error when it is not the
// server's answer.
func probe(ctx context.Context, ri dynamic.ResourceInterface, labelSel, fieldSel string) (reason string, err error) {
	opts := metav1.ListOptions{LabelSelector: labelSel, FieldSelector: fieldSel, Limit: 1}
	l, err := ri.List(ctx, opts)
	if err != nil {
		return refusal("list", fieldSel, err)
	}
	timeout := int64(1) // the watch is closed at once: this only bounds a stuck one
	w, err := ri.Watch(ctx, metav1.ListOptions{LabelSelector: labelSel, FieldSelector: fieldSel, ResourceVersion: l.GetResourceVersion(), TimeoutSeconds: &timeout})
	if err != nil {
		return refusal("watch", fieldSel, err)
	}
	w.Stop()
	return "", nil
}

// refusal words the server's refusal of verb: "forbidden (list)", or for a
// field selector the resource does not support (400), "--field-selector
// refused (list): field label not supported: spec.nodeName".
func refusal(verb, fieldSel string, err error) (string, error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return "", err
	}
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden (" + verb + ")", nil
	case apierrors.IsBadRequest(err) && fieldSel != "":
		return fmt.Sprintf("--field-selector refused (%s): %s", verb, st.Status().Message), nil
	}
	return fmt.Sprintf("%d %s (%s): %s", st.Status().Code, apierrors.ReasonForError(err), verb, st.Status().Message), nil
}

// resourceName is how kwrec names a resource in its messages: plural, then
// a dot and the group unless core (configmaps, deployments.apps).
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}
