package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
