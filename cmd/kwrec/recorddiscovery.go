package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/recorder"
)

// recordDiscovery records, through rec, the discovery a replay of res
// serves as the recorded server's own: /version, /api and /apis (asked the
// way client-go asks, so the aggregated form when the server has it), the
// legacy resource list of each recorded group version, and the OpenAPI v3
// index with the documents of those group versions (what kubectl explain
// reads). The requests are client-go's own, so the cassette holds exactly
// what a client asks. It returns every error met; the recording goes on
// without what failed (a server that forbids /openapi/v3, say).
func recordDiscovery(ctx context.Context, cfg *rest.Config, rec *recorder.Recorder, res []resource) error {
	c := rest.CopyConfig(cfg)
	rec.WrapConfig(c)
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return err
	}
	var errs []error
	if _, err := dc.ServerVersionWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("/version: %w", err))
	}
	if _, err := dc.ServerGroupsWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("/api and /apis: %w", err))
	}
	var gvs []schema.GroupVersion
	for _, r := range res {
		if gv := r.gvr.GroupVersion(); !slices.Contains(gvs, gv) {
			gvs = append(gvs, gv)
		}
	}
	for _, gv := range gvs {
		if _, err := dc.ServerResourcesForGroupVersionWithContext(ctx, gv.String()); err != nil {
			errs = append(errs, fmt.Errorf("the resources of %s: %w", gv, err))
		}
	}
	errs = append(errs, recordDefinitions(ctx, dc.RESTClient(), res)...)
	paths, err := dc.OpenAPIV3WithContext(ctx).PathsWithContext(ctx)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("/openapi/v3: %w", err))...)
	}
	for _, gv := range gvs {
		// The index names the core group api/v1, the others apis/G/V.
		key := "apis/" + gv.String()
		if gv.Group == "" {
			key = "api/" + gv.Version
		}
		doc, ok := paths[key]
		if !ok {
			errs = append(errs, fmt.Errorf("/openapi/v3 has no %s", key))
			continue
		}
		if _, err := doc.SchemaWithContext(ctx, runtime.ContentTypeJSON); err != nil {
			errs = append(errs, fmt.Errorf("/openapi/v3/%s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// recordDefinitions records a GET of the CustomResourceDefinition of each
// resource of res that may be a custom resource (its group has a dot), so
// that a replay knows its schema, subresources and printer columns, as the
// server does; unless res records the definitions themselves. A resource
// that has none (an aggregated API's) is passed over.
func recordDefinitions(ctx context.Context, c rest.Interface, res []resource) []error {
	if slices.ContainsFunc(res, func(r resource) bool {
		return r.gvr.Group == "apiextensions.k8s.io" && r.gvr.Resource == "customresourcedefinitions"
	}) {
		return nil
	}
	var errs []error
	var done []string
	for _, r := range res {
		name := r.gvr.Resource + "." + r.gvr.Group
		if !strings.Contains(r.gvr.Group, ".") || slices.Contains(done, name) {
			continue
		}
		done = append(done, name)
		err := c.Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", name).Do(ctx).Error()
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("the CustomResourceDefinition %s: %w", name, err))
		}
	}
	return errs
}
