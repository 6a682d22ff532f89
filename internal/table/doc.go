// Package table answers kubectl's server-side printing requests on replay:
// it indexes the rows of recorded meta.k8s.io Table bodies by object
// version and builds Table lists, gets and watch events for any view of
// a collection's timeline from them.
//
// # What the API server does (kube-apiserver v1.37.2, measured)
//
// kubectl get with its default output sends
//
//	Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json
//
// on its list (?limit=500) and on its watch (?resourceVersion=R&watch=true).
// The server picks the first Accept element it can serve (see [Wants]) and
// answers with Content-Type application/json: no as= parameter says it is
// a Table, only the body's kind does. Answers recorded from the control
// plane are in testdata/live.txtar.
//
// A list answer is a Table in the version asked (v1beta1 when that comes
// first), with the list's metadata (resourceVersion, and continue and
// remainingItemCount on a page), the columnDefinitions (ConfigMaps: Name,
// Data, Age) and one row per item, "rows":[] for none:
//
//	{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"211"},
//	 "columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"...","priority":0},...],
//	 "rows":[{"cells":["alpha",1,"0s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}}}]}
//
// Each row's object is, by default (includeObject unset, which means
// Metadata), a PartialObjectMetadata in the Table's own group version
// holding the object's whole metadata, managedFields included.
// includeObject=None gives "object":null and includeObject=Object the
// full object; kubectl sends neither. A get of one object is the same
// Table with one row and the object's resourceVersion as the Table's.
//
// A watch streams one Table per event, with one row and the object's
// resourceVersion as the Table's: {"type":"MODIFIED","object":{Table}}. Only
// the first event of a watch, whatever its type, carries the column
// definitions; every later one has "columnDefinitions":null (the server
// sets the table options' noHeaders after encoding the first). A DELETED
// event's row shows the object's last state at the deletion's
// resourceVersion, a version no list shows: only a recorded Table watch
// has it.
//
// A BOOKMARK is a Table too, not the plain bookmark object: one row whose
// cells are what the printer makes of an empty object (ConfigMaps:
// ["",0,"<unknown>"]) and whose object is a PartialObjectMetadata with
// only the resourceVersion, plus the k8s.io/initial-events-end annotation
// when it ends a streaming list's initial events. An ERROR event's object
// is the plain Status.
//
// The cells are computed when the server answers: the Age a recorded row
// shows is the age the object had then.
//
// # Use
//
// Record a Table-form list and a Table-form watch of each collection beside
// the JSON ones; on replay feed them to one [Index] per collection:
//
//	var x table.Index
//	err := x.AddList(listBody)        // every recorded Table list
//	err = x.AddWatchEvent(line)       // every recorded Table watch line
//
// Rows are keyed by [Version] (namespace/name and resourceVersion) and
// stored once, as first seen; the first column definitions are kept. Then,
// for a request that [Wants] a Table, answer the timeline's view from the
// index: the state at a resourceVersion as [Index.List] with the versions
// the plain answer would list, in its order; each event of a watch as
// [Index.WatchEvent], first for the stream's first; bookmarks as
// [Index.Bookmark]. Every builder returns ok=false when the index lacks a
// row or the column definitions: answer in plain JSON then (or, within a
// watch, leave a bookmark out, as a server may). Only the default
// includeObject is served: a request with includeObject=None or Object
// should fall back.
package table
