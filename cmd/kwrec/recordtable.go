package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// tableAccept is kubectl's Accept header for server-side printing.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// collectionPath is the API path of a resource's collection, namespaced
// when ns is not empty.
func collectionPath(gvr schema.GroupVersionResource, ns string) string {
	p := "/api/" + gvr.Version
	if gvr.Group != "" {
		p = "/apis/" + gvr.Group + "/" + gvr.Version
	}
	if ns != "" {
		p += "/namespaces/" + ns
	}
	return p + "/" + gvr.Resource
}

// recordTable records a collection the way kubectl get -w sees it: a
// list and then a watch in the Table form (server-side printing), beside
// the JSON list and watch, so that a replay can answer kubectl's default
// output for any point of the recording with the columns the live server
// printed. It re-watches from the last resourceVersion when a watch ends
// and re-lists after an error, until ctx is done. cfg sends through the
// recorder. Its first list runs in a turn that startList gives.
func recordTable(ctx context.Context, cfg *rest.Config, path, labelSelector, fieldSelector string, startList func() (done func(), ok bool)) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(cfg.Host, "/") + path
	get := func(q url.Values) (*http.Response, error) {
		if labelSelector != "" {
			q.Set("labelSelector", labelSelector)
		}
		if fieldSelector != "" {
			q.Set("fieldSelector", fieldSelector)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", tableAccept)
		req.Header.Set("User-Agent", "kwrec-record (table)")
		return hc.Do(req)
	}
	// A server that goes away (restarted, its etcd down) is waited for,
	// as a reflector does: the recording goes on when it is back.
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: math.MaxInt32}
	listDone, ok := startList()
	defer listDone()
	if !ok {
		return nil
	}
	for ctx.Err() == nil {
		rv, code, err := listTable(get, path)
		listDone()
		if err != nil && code >= 400 && code < 500 && code != http.StatusTooManyRequests && code != http.StatusGone {
			return err // refused for good (forbidden, not found): waiting will not help
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(backoff.Step()):
			}
			continue
		}
		backoff.Duration = 200 * time.Millisecond
		for ctx.Err() == nil && rv != "" {
			rv, err = watchTable(get, rv)
			if err != nil {
				break // re-list
			}
		}
	}
	return nil
}

// listTable lists the collection in the Table form, page by page as
// kubectl does (limit 500, then each continue token), and returns the
// list's resourceVersion, and the HTTP status of a failed answer. Every
// page is recorded, so that a replay has a row for every object and can
// answer kubectl's own pages as the server did.
func listTable(get func(url.Values) (*http.Response, error), path string) (string, int, error) {
	rv, cont := "", ""
	for {
		q := url.Values{"limit": {"500"}}
		if cont != "" {
			q.Set("continue", cont)
		}
		resp, err := get(q)
		if err != nil {
			return "", 0, err
		}
		var list struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
				Continue        string `json:"continue"`
			} `json:"metadata"`
		}
		// Read to the end, so the recording ends with the server's EOF
		// rather than the client closing early.
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			err = json.Unmarshal(body, &list)
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			return "", resp.StatusCode, fmt.Errorf("table list of %s: %d %v", path, resp.StatusCode, err)
		}
		if rv == "" {
			rv = list.Metadata.ResourceVersion
		}
		if cont = list.Metadata.Continue; cont == "" {
			return rv, 0, nil
		}
	}
}

// watchTable reads one Table-form watch from rv to its end and returns the
// resourceVersion to go on from; an error (an ERROR event, a failed
// request) asks for a re-list.
func watchTable(get func(url.Values) (*http.Response, error), rv string) (string, error) {
	resp, err := get(url.Values{"watch": {"true"}, "resourceVersion": {rv}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return "", fmt.Errorf("table watch: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Type == "ERROR" {
			return "", fmt.Errorf("table watch: an error event")
		}
		if v := ev.Object.Metadata.ResourceVersion; v != "" {
			rv = v
		}
	}
	return rv, nil
}
