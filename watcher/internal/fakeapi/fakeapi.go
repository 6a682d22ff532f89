// Package fakeapi is a scripted stand-in for kube-apiserver, for the
// watcher's tests: a loopback HTTP server that answers each request with
// the next [Reply] of its script, in JSON the way the real apiserver
// writes it (list bodies, watch streams of one event per line, flushed).
// A real client-go client pointed at it exercises client-go's own decoding.
//
// Requests past the end of the script, or of the wrong kind (a list where
// the script has a watch), get HTTP 500 with a Status saying so: the code
// under test sees an error, never a hang.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
)

// Reply is one scripted answer.
type Reply struct {
	// Watch says the request must be a watch (?watch=true); otherwise it
	// must be a list.
	Watch bool
	// Code is the HTTP status. Default 200.
	Code int
	// Body is the JSON body of a list or of a non-200 answer.
	Body string
	// Events are the lines of a 200 watch answer, one JSON watch event
	// each (see [Added], [Bookmark], [ErrorEvent]), written and flushed
	// one at a time. A line need not be valid JSON.
	Events []string
	// Hold keeps the watch open after its events until the client goes
	// away; by default the stream ends after the last event.
	Hold bool
}

// Request is what the server saw of one request.
type Request struct {
	Path  string
	Query url.Values
}

// Server serves a script. Create it with [Start]; Close it when done.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   []Reply
	requests []Request
}

// Start starts a server that answers with script, in order.
func Start(script ...Reply) *Server {
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Config returns a client config for the server, with client-side rate
// limiting off so tests never wait on it.
func (s *Server) Config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, QPS: -1}
}

// Close shuts the server down, ending held watches.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns the requests served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, Request{Path: r.URL.Path, Query: r.URL.Query()})
	var reply Reply
	ok := n < len(s.script)
	if ok {
		reply = s.script[n]
	}
	s.mu.Unlock()

	isWatch := r.URL.Query().Get("watch") == "true"
	switch {
	case !ok:
		reply = Reply{Code: 500, Body: Status(500, "InternalError", fmt.Sprintf("fakeapi: script exhausted after %d replies", n))}
	case reply.Watch != isWatch:
		reply = Reply{Code: 500, Body: Status(500, "InternalError", fmt.Sprintf("fakeapi: request %d is %s, the script expects %s", n, kind(isWatch), kind(reply.Watch)))}
	}
	if reply.Code == 0 {
		reply.Code = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(reply.Code)
	if reply.Code != http.StatusOK || !reply.Watch {
		fmt.Fprint(w, reply.Body)
		return
	}
	f := w.(http.Flusher)
	f.Flush()
	for _, line := range reply.Events {
		fmt.Fprintln(w, line)
		f.Flush()
	}
	if reply.Hold {
		<-r.Context().Done()
	}
}

func kind(watch bool) string {
	if watch {
		return "a watch"
	}
	return "a list"
}

// ConfigMap returns a ConfigMap default/name at resourceVersion rv.
func ConfigMap(name, rv string) string {
	return mustJSON(map[string]any{
		"kind": "ConfigMap", "apiVersion": "v1",
		"metadata": map[string]any{"name": name, "namespace": "default", "resourceVersion": rv},
	})
}

// List returns a ConfigMapList at resourceVersion rv with continue token
// cont ("" on the last page) holding items (from [ConfigMap]).
func List(rv, cont string, items ...string) string {
	raw := make([]json.RawMessage, len(items))
	for i, it := range items {
		raw[i] = json.RawMessage(it)
	}
	md := map[string]any{"resourceVersion": rv}
	if cont != "" {
		md["continue"] = cont
	}
	return mustJSON(map[string]any{"kind": "ConfigMapList", "apiVersion": "v1", "metadata": md, "items": raw})
}

// Added, Modified and Deleted return watch events of that type for obj.
func Added(obj string) string    { return event("ADDED", obj) }
func Modified(obj string) string { return event("MODIFIED", obj) }
func Deleted(obj string) string  { return event("DELETED", obj) }

// Bookmark returns a BOOKMARK event at rv, as the apiserver sends it: an
// object of the watched kind with only a resourceVersion.
func Bookmark(rv string) string {
	return event("BOOKMARK", mustJSON(map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": rv}}))
}

// InitialEventsEnd returns the bookmark that ends a streaming list's
// initial events.
func InitialEventsEnd(rv string) string {
	return event("BOOKMARK", mustJSON(map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]any{
		"resourceVersion": rv, "annotations": map[string]string{"k8s.io/initial-events-end": "true"},
	}}))
}

// ErrorEvent returns an ERROR event carrying a Status, such as the
// apiserver's answer to a watch from a compacted resourceVersion:
// ErrorEvent(410, "Expired", "too old resource version: 5 (20)").
func ErrorEvent(code int, reason, message string) string {
	return event("ERROR", Status(code, reason, message))
}

// Status returns a failure Status object.
func Status(code int, reason, message string) string {
	return mustJSON(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "reason": reason, "code": code, "message": message})
}

func event(typ, obj string) string {
	return mustJSON(map[string]any{"type": typ, "object": json.RawMessage(obj)})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only static, valid values reach here
	}
	return string(b)
}
