package wire

import (
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/munnerz/goautoneg"
)

// Media types the API server speaks.
const (
	MediaJSON     = "application/json"
	MediaProtobuf = "application/vnd.kubernetes.protobuf"
	// MediaProtobufWatch is the Content-Type of a protobuf watch stream.
	MediaProtobufWatch = MediaProtobuf + ";stream=watch"
)

// IsWatch reports whether a request's query asks for a watch: watch=true,
// =1, or Python's =True (strconv.ParseBool's spellings, as the API server
// accepts them).
func IsWatch(q url.Values) bool {
	w, _ := strconv.ParseBool(q.Get("watch"))
	return w
}

// IsWatchURL reports whether a request URL is a watch: its query asks
// for one (see [IsWatch]), or its path is the legacy /api/v1/watch/... or
// /apis/GROUP/VERSION/watch/... form.
func IsWatchURL(u *url.URL) bool {
	if IsWatch(u.Query()) {
		return true
	}
	seg := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(seg) > 2 && seg[0] == "api" && seg[2] == "watch":
		return true
	case len(seg) > 3 && seg[0] == "apis" && seg[3] == "watch":
		return true
	}
	return false
}

// TimeoutSeconds returns a request's timeoutSeconds, 0 when absent or not
// a positive integer. client-go picks a random 300-600 s for every watch.
func TimeoutSeconds(q url.Values) time.Duration {
	n, err := strconv.Atoi(q.Get("timeoutSeconds"))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// MediaType returns the media type of a Content-Type or Accept element,
// without parameters.
func MediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.TrimSpace(strings.SplitN(ct, ";", 2)[0])
	}
	return mt
}

// Clauses parses an Accept header as the API server does (goautoneg, as
// k8s.io/apiserver's negotiation): the elements in order of q, the more
// specific first, without those the client refuses (q=0).
func Clauses(accept string) []goautoneg.Accept {
	var out []goautoneg.Accept
	for _, c := range goautoneg.ParseAccept(accept) {
		if c.Q > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Matches reports whether Accept element c takes media type mt
// ("type/subtype").
func Matches(c goautoneg.Accept, mt string) bool {
	typ, sub, _ := strings.Cut(mt, "/")
	return (c.Type == typ || c.Type == "*") && (c.SubType == sub || c.SubType == "*")
}

// Accepts reports whether an Accept header value takes content type ct.
// An element with an as= parameter (kubectl's server-side printing,
// application/json;as=Table;g=meta.k8s.io;v=v1) asks for a transformed
// object, not the plain media type, so it does not count.
func Accepts(accept, ct string) bool {
	want := MediaType(ct)
	for _, c := range Clauses(accept) {
		if c.Params["as"] == "" && Matches(c, want) {
			return true
		}
	}
	return false
}

// AcceptsAs reports whether an Accept header value has an element asking
// for the conversion as (as=APIGroupDiscoveryList, as=Table).
func AcceptsAs(accept, as string) bool {
	for _, c := range Clauses(accept) {
		if c.Params["as"] == as {
			return true
		}
	}
	return false
}

// Negotiate picks the encoding of a response to a request with the given
// Accept header: protobuf when the first element (in the server's order,
// see [Clauses]) that kwrec can serve is protobuf (client-go's typed
// clients send "application/vnd.kubernetes.protobuf,application/json"),
// JSON otherwise. ok is false when the client accepts neither.
func Negotiate(accept string) (protobuf, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return false, true
	}
	for _, c := range Clauses(accept) {
		switch {
		case c.Params["as"] != "":
		case Matches(c, MediaJSON): // JSON first, as the server lists its serializers
			return c.SubType == "vnd.kubernetes.protobuf", true
		case Matches(c, MediaProtobuf):
			return true, true
		}
	}
	return false, false
}

// AcceptsEncoding reports whether an Accept-Encoding header value takes
// content coding coding (gzip): named, or *, with a q above 0.
func AcceptsEncoding(ae, coding string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, coding) && name != "*" {
			continue
		}
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			if k, v, ok := strings.Cut(p, "="); ok && strings.TrimSpace(k) == "q" {
				var err error
				if q, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					q = 0
				}
			}
		}
		return q > 0
	}
	return false
}
