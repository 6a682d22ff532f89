package wire

import (
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"
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

// Accepts reports whether an Accept header value takes content type ct.
// An element with an as= parameter (kubectl's server-side printing,
// application/json;as=Table;g=meta.k8s.io;v=v1) asks for a transformed
// object, not the plain media type, so it does not count.
func Accepts(accept, ct string) bool {
	want := MediaType(ct)
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			mt = MediaType(part)
		}
		if params["as"] != "" {
			continue
		}
		switch {
		case mt == "*/*", mt == want:
			return true
		case strings.HasSuffix(mt, "/*") && strings.HasPrefix(want, strings.TrimSuffix(mt, "*")):
			return true
		}
	}
	return false
}

// Negotiate picks the encoding of a response to a request with the given
// Accept header: protobuf when the first element the client lists that
// kwrec can serve is protobuf (client-go's typed clients send
// "application/vnd.kubernetes.protobuf,application/json"), JSON otherwise.
// ok is false when the client accepts neither.
func Negotiate(accept string) (protobuf, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return false, true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(part)
		if err != nil || params["as"] != "" {
			continue
		}
		switch mt {
		case MediaProtobuf:
			return true, true
		case MediaJSON, "*/*", "application/*":
			return false, true
		}
	}
	return false, false
}
