package overlay

import (
	"encoding/json"
	"net/url"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// CRDPath is the collection of CustomResourceDefinitions.
var CRDPath = apipath.Path{Group: apiextensionsv1.GroupName, Version: "v1", Resource: "customresourcedefinitions"}

// apiserverUserAgent is the user agent of the apiextensions-apiserver's
// controllers, whose field manager is "kube-apiserver".
const apiserverUserAgent = "kube-apiserver/v1.37.2 (linux/amd64) kubernetes/v1.37.2"

// establish does to a CustomResourceDefinition just stored what the
// apiextensions-apiserver's naming and establishing controllers do to it
// (k8s.io/apiextensions-apiserver/pkg/controller/status and .../establish):
// its spec's names become its accepted names with the NamesAccepted
// condition, then the Established condition turns True. Each is a status
// write of its own, with its own watch event, as on the server. Names are
// not checked against the group's other definitions: a conflict is not
// simulated.
func (wr *Writer) establish(t *timeline.Timeline, stored []byte) {
	var crd apiextensionsv1.CustomResourceDefinition
	if json.Unmarshal(stored, &crd) != nil || crd.DeletionTimestamp != nil {
		return
	}
	now := metav1.NewTime(wr.cfg.Clock.Now()).Rfc3339Copy()
	named := crd.Status
	named.AcceptedNames = crd.Spec.Names
	named.Conditions = withCondition(named.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"}, now)
	if !established(named.Conditions) {
		named.Conditions = withCondition(named.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "Installing", Message: "the initial names have been accepted"}, now)
	}
	if !wr.patchStatus(t, crd.Name, named) {
		return
	}
	named.Conditions = withCondition(named.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}, now)
	wr.patchStatus(t, crd.Name, named)
}

// established reports whether conds hold Established True.
func established(conds []apiextensionsv1.CustomResourceDefinitionCondition) bool {
	return slices.ContainsFunc(conds, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	})
}

// withCondition is apiextensions' SetCRDCondition: c replaces the
// condition of its type, keeping its transition time when its status did
// not change.
func withCondition(conds []apiextensionsv1.CustomResourceDefinitionCondition, c apiextensionsv1.CustomResourceDefinitionCondition, now metav1.Time) []apiextensionsv1.CustomResourceDefinitionCondition {
	conds = slices.Clone(conds)
	c.LastTransitionTime = now
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		if conds[i].Status == c.Status {
			c.LastTransitionTime = conds[i].LastTransitionTime
		}
		conds[i] = c
		return conds
	}
	return append(conds, c)
}

// patchStatus merge-patches the status of CustomResourceDefinition name
// as the apiextensions-apiserver's controllers write it; it reports
// whether the write went through.
func (wr *Writer) patchStatus(t *timeline.Timeline, name string, st apiextensionsv1.CustomResourceDefinitionStatus) bool {
	body, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return false
	}
	w := write.Request{Verb: write.VerbPatch, Subresource: "status", Group: CRDPath.Group, Version: CRDPath.Version,
		Resource: CRDPath.Resource, Kind: "CustomResourceDefinition", StatusSubresource: true, Name: name,
		ContentType: "application/merge-patch+json", Body: body, Query: url.Values{}, UserAgent: apiserverUserAgent}
	_, _, err = wr.applyOnce(t, w)
	return err == nil
}
