package overlay

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// gcUserAgent is what the garbage collector's writes carry, as
// kube-controller-manager's do; their field manager is its first part.
const gcUserAgent = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/gc"

// gcMaxRounds bounds the garbage collector's passes after one write: each
// pass follows the owner references one level further down.
const gcMaxRounds = 64

// live is an object of the overlay world as the garbage collector sees it.
type live struct {
	res  apipath.Path // its collection; Namespace and Name are the object's
	meta metav1.ObjectMeta
	// written: its current version is a write's (the recording's own
	// objects being deleted are left to the recording).
	written bool
}

// collectGarbage is kube-controller-manager's garbage collector, run over
// the overlay world after a write deleted an object or marked it for
// deletion (kwrec's addition: a bare API server, and envtest, have none;
// [Options.DisableGarbageCollection] turns it off). Until nothing changes:
//   - an object deleted by a write or by the collector takes with it each
//     dependent that has no other owner left (in the background), and a
//     dependent with other owners loses its reference to it;
//   - an object marked with the foregroundDeletion finalizer has its
//     dependents deleted (in the foreground), and loses the finalizer once
//     none of those with blockOwnerDeletion is left;
//   - an object marked with the orphan finalizer has every reference to it
//     removed from its dependents, then loses the finalizer.
//
// Only what the code under test deleted is collected: a recorded deletion
// brought its recorded consequences with it.
func (wr *Writer) collectGarbage(removed []types.UID) {
	c := collector{wr: wr, deleted: map[types.UID]bool{}}
	for _, u := range removed {
		c.deleted[u] = true
	}
	for range gcMaxRounds {
		world := wr.liveObjects(c.interest(), false)
		// What this round's world saw gone: what the round deletes is
		// seen by the next one, with the references it dropped meanwhile.
		gone := maps.Clone(c.deleted)
		changed := false
		for _, o := range world {
			changed = c.finalize(world, o) || changed
		}
		for _, d := range world {
			changed = c.dangling(d, gone) || changed
		}
		if !changed {
			return
		}
	}
}

// collector is one run of the garbage collector after a write: what it
// has deleted so far, by uid.
type collector struct {
	wr      *Writer
	deleted map[types.UID]bool
}

// interest is what a round of the collector looks at: what is deleted
// and the objects marked for deletion, with their dependents, then
// everything that names them.
func (c collector) interest() map[types.UID]bool {
	interest := maps.Clone(c.deleted)
	if !c.wr.gcMarked.Load() {
		return interest
	}
	marked := false
	for _, o := range c.wr.liveObjects(c.deleted, true) {
		if o.written && o.meta.DeletionTimestamp != nil {
			interest[o.meta.UID] = true
			marked = true
		}
	}
	if !marked {
		c.wr.gcMarked.Store(false)
	}
	return interest
}

// finalize does the work of the finalizer of o, an object the code under
// test marked for deletion, and reports whether it changed anything.
func (c collector) finalize(world []live, o live) bool {
	if o.meta.DeletionTimestamp == nil || !o.written {
		return false
	}
	changed := false
	switch {
	case slices.Contains(o.meta.Finalizers, metav1.FinalizerOrphanDependents):
		for _, d := range dependents(world, o) {
			changed = c.dropOwner(d, o.meta.UID) || changed
		}
		changed = c.dropFinalizer(o, metav1.FinalizerOrphanDependents) || changed
	case slices.Contains(o.meta.Finalizers, metav1.FinalizerDeleteDependents):
		changed = c.foreground(world, o)
	}
	return changed
}

// foreground deletes the dependents of o, and drops its foregroundDeletion
// finalizer once none that blocks it is left.
func (c collector) foreground(world []live, o live) bool {
	changed, blocked := false, false
	for _, d := range dependents(world, o) {
		switch {
		case c.solidOwner(d, o.meta.UID):
			// Another owner keeps it: it only loses this one.
			changed = c.dropOwner(d, o.meta.UID) || changed
			continue
		case d.meta.DeletionTimestamp != nil:
		case len(dependents(world, d)) > 0 || c.mentioned(d.meta.UID):
			changed = c.delete(d, metav1.DeletePropagationForeground) || changed
		default:
			changed = c.delete(d, metav1.DeletePropagationBackground) || changed
		}
		blocked = blocked || blocks(d, o.meta.UID)
	}
	if !blocked {
		changed = c.dropFinalizer(o, metav1.FinalizerDeleteDependents) || changed
	}
	return changed
}

// dangling deletes d if every owner it names is gone, or drops those
// gone if it has others, and reports whether it changed anything.
func (c collector) dangling(d live, gone map[types.UID]bool) bool {
	var dangling, others bool
	for _, ref := range d.meta.OwnerReferences {
		if gone[ref.UID] {
			dangling = true
		} else {
			others = true
		}
	}
	changed := false
	switch {
	case !dangling:
	case others:
		for _, ref := range d.meta.OwnerReferences {
			if gone[ref.UID] {
				changed = c.dropOwner(d, ref.UID) || changed
			}
		}
	case d.meta.DeletionTimestamp == nil:
		changed = c.delete(d, metav1.DeletePropagationBackground)
	}
	return changed
}

// dependents are the objects of world that name owner in their
// ownerReferences (in its namespace, for a namespaced owner).
func dependents(world []live, owner live) []live {
	var out []live
	for _, d := range world {
		if owner.meta.Namespace != "" && d.meta.Namespace != owner.meta.Namespace {
			continue
		}
		for _, ref := range d.meta.OwnerReferences {
			if ref.UID == owner.meta.UID {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// solidOwner reports whether d has an owner other than owner that exists
// and is not being deleted.
func (c collector) solidOwner(d live, owner types.UID) bool {
	for _, ref := range d.meta.OwnerReferences {
		if ref.UID == owner || c.deleted[ref.UID] {
			continue
		}
		for _, o := range c.wr.liveObjects(map[types.UID]bool{ref.UID: true}, false) {
			if o.meta.UID == ref.UID && o.meta.DeletionTimestamp == nil {
				return true
			}
		}
	}
	return false
}

// mentioned reports whether some object names uid (as an owner).
func (c collector) mentioned(uid types.UID) bool {
	for _, o := range c.wr.liveObjects(map[types.UID]bool{uid: true}, false) {
		for _, ref := range o.meta.OwnerReferences {
			if ref.UID == uid {
				return true
			}
		}
	}
	return false
}

// blocks reports whether d holds back the foreground deletion of owner.
func blocks(d live, owner types.UID) bool {
	for _, ref := range d.meta.OwnerReferences {
		if ref.UID == owner && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// liveObjects returns the objects of every collection that takes writes,
// as of now, that the collector needs to see: those whose bytes name a
// uid of interest (an owner, or the object itself), and those a write
// marked for deletion with the orphan or foregroundDeletion finalizer.
// Each object is decoded only when its bytes pass that test, so a scan of
// a large recording costs a search of its bytes. Each object once (a
// namespace's timeline and the all-namespaces one may both hold it).
//
// With writtenOnly, only objects whose current version a write made are
// looked at (the marked ones are such).
func (wr *Writer) liveObjects(interest map[types.UID]bool, writtenOnly bool) []live {
	wanted := gcWanted(interest)
	seen := map[types.UID]bool{}
	var out []live
	for _, t := range wr.world.Distinct() {
		if t.Takes() {
			out = wr.liveOf(t, wanted, writtenOnly, seen, out)
		}
	}
	return out
}

// gcWanted returns what tells, from its recorded bytes, an object the
// collector must look at: it names a UID of interest, or (written by the
// code under test) carries a finalizer the collector acts on.
func gcWanted(interest map[types.UID]bool) func(raw []byte, written bool) bool {
	needles := [][]byte{[]byte(metav1.FinalizerDeleteDependents), []byte(metav1.FinalizerOrphanDependents)}
	uids := make([][]byte, 0, len(interest))
	for u := range interest {
		uids = append(uids, []byte(u))
	}
	return func(raw []byte, written bool) bool {
		for _, u := range uids {
			if bytes.Contains(raw, u) {
				return true
			}
		}
		if written {
			for _, n := range needles {
				if bytes.Contains(raw, n) {
					return true
				}
			}
		}
		return false
	}
}

// liveOf appends to out the objects of t that wanted picks and seen has
// not, noting them in seen.
func (wr *Writer) liveOf(t *timeline.Timeline, wanted func([]byte, bool) bool, writtenOnly bool, seen map[types.UID]bool, out []live) []live {
	items, err := Current(t)
	if err != nil {
		return out
	}
	if writtenOnly {
		items = slices.DeleteFunc(items, func(o timeline.Object) bool { return !o.Ref.W })
	}
	var picked []int
	if wr.world.cfg.Objects.Each(t, items, func(k int, raw []byte) error {
		if wanted(raw, items[k].Ref.W) {
			picked = append(picked, k)
		}
		return nil
	}) != nil {
		return out
	}
	for _, i := range picked {
		b, err := wr.world.JSON(t, &items[i])
		if err != nil {
			continue
		}
		var o struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if json.Unmarshal(b, &o) != nil || seen[o.Metadata.UID] {
			continue
		}
		seen[o.Metadata.UID] = true
		res := t.Res
		res.Namespace, res.Name = o.Metadata.Namespace, o.Metadata.Name
		out = append(out, live{res: res, meta: o.Metadata, written: items[i].Ref.W})
	}
	return out
}

// write applies one write of the garbage collector to o; it reports
// whether it changed anything, and notes what it deleted.
func (c collector) write(o live, verb, contentType string, body []byte) bool {
	docs, err := c.wr.cfg.Docs()
	if err != nil {
		return false
	}
	info, ok := docs.Lookup(o.res.Group, o.res.Version, o.res.Resource)
	if !ok {
		return false
	}
	w := write.Request{Verb: verb, Group: o.res.Group, Version: o.res.Version, Resource: o.res.Resource, Kind: info.Kind,
		Namespaced: info.Namespaced, StatusSubresource: info.Status, Namespace: o.res.Namespace, Name: o.res.Name,
		ContentType: contentType, Body: body, Query: url.Values{}, UserAgent: gcUserAgent}
	res, stored, err := c.wr.applyOnce(c.wr.world.ForWrite(o.res, info.Kind), w)
	if err != nil || stored == nil {
		return false
	}
	if res.Event == write.EventDeleted {
		c.deleted[o.meta.UID] = true
	}
	return true
}

// delete deletes o with policy, preconditioned on its uid.
func (c collector) delete(o live, policy metav1.DeletionPropagation) bool {
	b, err := json.Marshal(metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &o.meta.UID}})
	if err != nil {
		return false
	}
	return c.write(o, "delete", wire.MediaJSON, b)
}

// dropOwner removes the reference to owner from o's ownerReferences.
func (c collector) dropOwner(o live, owner types.UID) bool {
	refs := slices.DeleteFunc(slices.Clone(o.meta.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.UID == owner })
	// What the patch deletes, if anything, is not the run's to note.
	aside := collector{wr: c.wr, deleted: map[types.UID]bool{}}
	return aside.patchMeta(o, map[string]any{"ownerReferences": nilIfEmpty(refs)})
}

// dropFinalizer removes finalizer f from o, which deletes an object
// marked for deletion when it was the last.
func (c collector) dropFinalizer(o live, f string) bool {
	fs := slices.DeleteFunc(slices.Clone(o.meta.Finalizers), func(x string) bool { return x == f })
	return c.patchMeta(o, map[string]any{"finalizers": nilIfEmpty(fs)})
}

// patchMeta merge-patches o's metadata with m, preconditioned on its uid.
func (c collector) patchMeta(o live, m map[string]any) bool {
	m["uid"] = o.meta.UID
	b, err := json.Marshal(map[string]any{"metadata": m})
	if err != nil {
		return false
	}
	return c.write(o, "patch", "application/merge-patch+json", b)
}

func nilIfEmpty[T any](s []T) any {
	if len(s) == 0 {
		return nil
	}
	return s
}
