package report

import (
	"bytes"
	"compress/gzip"
	"encoding/json"

	"github.com/kwrec/kwrec/replay"
)

// Options configures [Build]. The zero value reports the cassette with the
// edits its header stores.
type Options struct {
	// Edits are placed after the cassette's own edits, as `kwrec show`
	// places them (see [replay.Replayer.Edits]). Default: none.
	Edits []replay.Edit
}

// Report is a cassette as the page draws it. Times are microseconds from
// the cassette start; indexes point into the report's own slices.
type Report struct {
	// Title is the cassette's file name.
	Title      string            `json:"title"`
	RecordedAt string            `json:"recordedAt"`
	Server     string            `json:"server,omitempty"`
	Redactions []string          `json:"redactions"`
	Labels     map[string]string `json:"labels,omitempty"`
	// End is the latest time anything happened.
	End int64 `json:"end"`
	// Truncated holds the error of a cassette cut short (a recorder was
	// killed): the report shows everything before the cut.
	Truncated string `json:"truncated,omitempty"`
	// Types names the mark types; [Marks].Type indexes it.
	Types  []string `json:"types"`
	Groups []Group  `json:"groups"`
	Lanes  []Lane   `json:"lanes"`
	Marks  Marks    `json:"marks"`
	// Lists holds the object versions each list mark (by index, as a
	// decimal string) holds, in the list's order.
	Lists map[string][]int `json:"lists,omitempty"`
	// Notes are the deduplicated one-line summaries [Marks].Note indexes.
	Notes    []string `json:"notes"`
	Objects  []Object `json:"objects"`
	Versions Versions `json:"versions"`
	Edits    []Edit   `json:"edits"`
}

// The mark types, in [Report].Types order.
const (
	TypeAdded    = "ADDED"
	TypeModified = "MODIFIED"
	TypeDeleted  = "DELETED"
	TypeBookmark = "BOOKMARK"
	TypeError    = "ERROR"
	// TypeList is a whole list body (a List kind or a Table).
	TypeList = "LIST"
	// TypeObject is a whole body holding one object (a get, a write).
	TypeObject = "OBJECT"
	// TypeOther is any other body or chunk: discovery, OpenAPI, text.
	TypeOther = "OTHER"
)

var types = []string{TypeAdded, TypeModified, TypeDeleted, TypeBookmark, TypeError, TypeList, TypeObject, TypeOther}

func typeIndex(t string) int {
	for i, s := range types {
		if s == t {
			return i
		}
	}
	return len(types) - 1
}

// Group is a collection (the request path without query, a watch's
// /watch/ segment removed) and the lanes of its interactions, or "other"
// for paths that are no resource (discovery, /version, OpenAPI).
type Group struct {
	Name  string `json:"name"`
	Lanes []int  `json:"lanes"`
}

// OtherGroup names the group of non-resource paths.
const OtherGroup = "other"

// Lane is one interaction.
type Lane struct {
	ID     int    `json:"id"`
	Group  int    `json:"group"`
	Method string `json:"method"`
	URL    string `json:"url"`
	Watch  bool   `json:"watch,omitempty"`
	// At is the request's start.
	At int64 `json:"at"`
	// Status, ContentType and Latency come from the response head;
	// Headers is when it arrived, -1 when there was none.
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Latency     int64  `json:"latency"`
	Headers     int64  `json:"headers"`
	// End is when the body ended, -1 when the cassette was cut first.
	End    int64  `json:"end"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// First and Count select the lane's marks, one per frame in order:
	// frame K (from 1) is mark First+K-1.
	First int `json:"first"`
	Count int `json:"count"`
}

// Marks are the frames of all lanes, lane by lane, in columns (a 100k-frame
// report stays small).
type Marks struct {
	// T is the frame's arrival.
	T []int64 `json:"t"`
	// Type indexes [Report].Types.
	Type []int `json:"type"`
	// Version is the object version the frame carries, -1 for none.
	Version []int `json:"v"`
	// Note indexes [Report].Notes, -1 for none.
	Note []int `json:"note"`
}

// Object is one object (kind, namespace and name) and its versions in the
// order the recording first shows each.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"name"`
	Versions  []int  `json:"versions"`
}

// Versions are the distinct object versions (kind/namespace/name at a
// resourceVersion), each stored once, in columns.
type Versions struct {
	Object []int    `json:"o"`
	RV     []string `json:"rv"`
	// Texts are the versions' texts, in order, as one JSON array,
	// gzipped as they were stored (so a report holds them compressed:
	// [Versions.Text] reads them). Each is the version's indented JSON
	// (or a "protobuf (N bytes)" line) as a delta: [base, op...], base the
	// version whose lines it edits (-1: none), each op a count of base
	// lines to keep (> 0) or skip (< 0), or a string of lines to insert,
	// joined by "\n". A version's base is the previous version of its
	// object, so the delta is also the diff the page shows; an object's
	// first version is based on an earlier object of its kind when that
	// is smaller. [Report.WriteHTML] embeds them apart from the rest, and
	// the page inflates them once it has drawn the timeline.
	Texts []byte `json:"-"`
}

// Text returns every version's text (see Texts), uncompressed.
func (v Versions) Text() ([]json.RawMessage, error) {
	zr, err := gzip.NewReader(bytes.NewReader(v.Texts))
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	if err := json.NewDecoder(zr).Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// Edit is a replay edit and where the page draws it.
type Edit struct {
	Edit string `json:"edit"`
	// Where is the edit's place in words (see [replay.EditReport]).
	Where string `json:"where"`
	// FromFlag is set for an edit of [Options].Edits, unset for one the
	// cassette stores.
	FromFlag bool    `json:"fromFlag,omitempty"`
	Places   []Place `json:"places"`
}

// Place is a point an edit is drawn at: on a lane, or across a group
// (Lane -1) for an edit anchored by resourceVersion.
type Place struct {
	Group int   `json:"group"`
	Lane  int   `json:"lane"`
	T     int64 `json:"t"`
	// Unreachable marks a point past the last recorded resourceVersion.
	Unreachable bool `json:"unreachable,omitempty"`
}
