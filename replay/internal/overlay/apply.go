package overlay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/write"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Applying a write of the code under test to the overlay world: computed
// from the object's current version, committed to its timeline, the
// garbage collector run after it, and the write noted.

// applyWrite is applyOnce, then the garbage collector when the write
// deleted an object or marked it for deletion with its dependents.
func (wr *Writer) applyWrite(t *timeline.Timeline, w write.Request) (res write.Result, stored []byte, err error) {
	res, stored, err = wr.applyOnce(t, w)
	if err == nil && stored != nil && w.Subresource == "" && res.Event != write.EventDeleted &&
		w.Group == CRDPath.Group && w.Resource == CRDPath.Resource {
		wr.establish(t, stored)
	}
	if err != nil || stored == nil || wr.cfg.DisableGarbageCollection {
		return res, stored, err
	}
	if res.Event != write.EventDeleted && !bytes.Contains(stored, []byte(metav1.FinalizerDeleteDependents)) &&
		!bytes.Contains(stored, []byte(metav1.FinalizerOrphanDependents)) {
		return res, stored, nil // most writes: nothing for the collector
	}
	var o struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if json.Unmarshal(stored, &o) != nil {
		return res, stored, nil
	}
	m := o.Metadata
	switch {
	case res.Event == write.EventDeleted:
		wr.collectGarbage([]types.UID{m.UID})
	case m.DeletionTimestamp != nil && (slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents) || slices.Contains(m.Finalizers, metav1.FinalizerOrphanDependents)):
		wr.gcMarked.Store(true)
		wr.collectGarbage(nil)
	}
	return res, stored, nil
}

// applyOnce computes w from the current object and commits it to t,
// again if a recorded event changed the object meanwhile. stored is the
// object as committed, with its resourceVersion; nil for a dry run or a
// write that changed nothing.
func (wr *Writer) applyOnce(t *timeline.Timeline, w write.Request) (res write.Result, stored []byte, err error) {
	for range writeRetries {
		var cur timeline.Object
		if res, cur, err = wr.compute(t, w); err != nil || w.DryRun || res.Event == "" {
			return res, nil, err
		}
		stored, err = commit(t, res, cur.RV)
		switch {
		case errors.Is(err, timeline.ErrStale):
			continue
		case err != nil:
			return res, nil, err
		}
		return res, stored, nil
	}
	return res, nil, apierrors.NewConflict(schema.GroupResource{Group: w.Group, Resource: w.Resource}, w.Name,
		fmt.Errorf("kwrec replay: the object changed %d times while the write was computed; try again", writeRetries))
}

// compute computes w from the current version of its object in t, which
// it returns.
func (wr *Writer) compute(t *timeline.Timeline, w write.Request) (write.Result, timeline.Object, error) {
	name := w.Name
	suffix, uid := wr.nameSuffix()
	if w.Verb == "create" {
		name = createName(w.Body, suffix)
	}
	cur, exists := t.Current(w.Namespace + "/" + name)
	var curJSON []byte
	if exists {
		var err error
		if curJSON, err = wr.world.JSON(t, &cur); err != nil {
			return write.Result{}, cur, err
		}
	}
	st := write.Stamp{Now: wr.cfg.Clock.Now(), UID: uid, Suffix: suffix}
	if w.DryRun && exists {
		// Nothing is stored: the answer carries the version it was
		// computed from, as the server's dry-run storage answers.
		st.RV = strconv.FormatInt(cur.RV, 10)
	}
	res, err := wr.cfg.Engine.Apply(w, curJSON, st)
	return res, cur, err
}

// commit commits a computed write to t over the object's version base. A
// stale base fails with [timeline.ErrStale], unless a graceful delete's
// mark was committed already.
func commit(t *timeline.Timeline, res write.Result, base int64) ([]byte, error) {
	m, err := wire.MetaJSON(res.Object)
	if err != nil {
		return nil, fmt.Errorf("the written object: %v", err)
	}
	if res.Marked != nil {
		// A graceful delete's mark, then the delete: two events.
		base, _, err = t.Commit(write.EventModified, m.Key(), m.Labels, base, res.Marked)
		switch {
		case errors.Is(err, timeline.ErrStale):
			return nil, err
		case err != nil:
			return nil, fmt.Errorf("%s: %v", t.Path, err)
		}
	}
	_, stored, err := t.Commit(res.Event, m.Key(), m.Labels, base, res.Object)
	switch {
	case errors.Is(err, timeline.ErrStale) && res.Marked == nil:
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%s: %v", t.Path, err)
	}
	return stored, nil
}

// createName is the name a create makes: the body's name, else its
// generateName plus suffix.
func createName(body []byte, suffix string) string {
	var o struct {
		Metadata struct{ Name, GenerateName string }
	}
	if json.Unmarshal(body, &o) != nil || o.Metadata.Name != "" {
		return o.Metadata.Name
	}
	if o.Metadata.GenerateName != "" {
		return o.Metadata.GenerateName + suffix
	}
	return ""
}

// nameSuffix is five characters from the API server's alphabet for
// generateName (no vowels, no confusable digits), and uid a UUID, both
// from the replay's own seeded sequence: a replay makes the same names and
// uids every time, so what a test wrote compares with a golden file.
func (wr *Writer) nameSuffix() (suffix, uid string) {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	wr.mu.Lock()
	defer wr.mu.Unlock()
	var b [5]byte
	for i := range b {
		b[i] = alphabet[wr.rand.IntN(len(alphabet))]
	}
	var u [16]byte
	for i := range u {
		u[i] = byte(wr.rand.Uint32())
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return string(b[:]), fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

// note keeps an applied write, and appends it to Config.Out. The lock is
// held while it is written so that Out holds the writes in order.
func (wr *Writer) note(req *http.Request, body []byte, code int, answer []byte) {
	h := http.Header{}
	for _, k := range []string{"Content-Type", "Accept", "User-Agent"} {
		if v := req.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	if wire.MediaType(h.Get("Content-Type")) == wire.MediaProtobuf {
		h.Set("Content-Type", wire.MediaJSON) // the body kept is the JSON it was read as
	}
	in := &cassettes.Interaction{
		At:       wr.cfg.Clock.Since(wr.cfg.Started),
		Request:  cassettes.Request{Method: req.Method, URL: req.URL.String(), Header: h, Body: body},
		Response: &cassettes.Response{Status: code, Header: http.Header{"Content-Type": {wire.MediaJSON}}},
		Frames:   []cassettes.Frame{{Data: answer}},
		End:      &cassettes.End{Reason: cassettes.EndEOF},
	}
	// As in any cassette: no Secret data, no token (the answers here do
	// not come from a real server, but the code's bodies may hold them).
	wr.cfg.Redact(in)
	wr.mu.Lock()
	defer wr.mu.Unlock()
	in.ID = len(wr.written) + 1
	wr.written = append(wr.written, in)
	if wr.cfg.Out != nil {
		// An error is kept by Out, which reports it when it is closed.
		_, _ = wr.cfg.Out.WriteInteraction(in)
	}
}

// Writes returns the writes applied, in order: each an interaction with
// the request, its JSON body, and the answer.
func (wr *Writer) Writes() []*cassettes.Interaction {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return append([]*cassettes.Interaction(nil), wr.written...)
}
