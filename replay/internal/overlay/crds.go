package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// installUserAgent is the user agent, and so the field manager, of the
// definitions [Writer.Install] creates.
const installUserAgent = "kwrec"

// Install creates each of defs, CustomResourceDefinitions' JSON, in the
// world, as envtest installs CRDs in its API server before a test; they
// are not writes of the code under test, and are not noted. A definition
// the world holds already gets the given spec (an update).
func (wr *Writer) Install(defs [][]byte) error {
	t := wr.world.ForWrite(CRDPath, "CustomResourceDefinition")
	for _, def := range defs {
		w := write.Request{Verb: write.VerbCreate, Group: CRDPath.Group, Version: CRDPath.Version, Resource: CRDPath.Resource,
			Kind: "CustomResourceDefinition", StatusSubresource: true, ContentType: "application/json", Body: def,
			Query: url.Values{}, UserAgent: installUserAgent}
		_, _, err := wr.applyWrite(t, w)
		if apierrors.IsAlreadyExists(err) {
			err = wr.replaceSpec(t, w)
		}
		if err != nil {
			return fmt.Errorf("installing the CustomResourceDefinition %s: %w", createName(def, ""), err)
		}
	}
	return nil
}

// replaceSpec updates the definition w would have created with w's spec.
func (wr *Writer) replaceSpec(t *timeline.Timeline, w write.Request) error {
	name := createName(w.Body, "")
	cur, ok := t.Current("/" + name)
	if !ok {
		return errors.New("it was there at its create and is gone now")
	}
	old, err := wr.world.JSON(t, &cur)
	if err != nil {
		return err
	}
	var o, def map[string]any
	if err := json.Unmarshal(old, &o); err != nil {
		return err
	}
	if err := json.Unmarshal(w.Body, &def); err != nil {
		return err
	}
	o["spec"] = def["spec"]
	if w.Body, err = json.Marshal(o); err != nil {
		return err
	}
	w.Verb, w.Name = write.VerbUpdate, name
	_, _, err = wr.applyWrite(t, w)
	return err
}
