package serve

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Authorized reports whether req carries the bearer token tok, compared
// in constant time. With no token, nothing passes.
func Authorized(req *http.Request, tok string) bool {
	if tok == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), []byte("Bearer "+tok)) == 1
}

// ReadBody reads req's body, at most [MaxBodyBytes], into out, so that a
// client cannot make the server hold an unbounded body in memory; it
// answers a larger one 413 RequestEntityTooLarge, as kube-apiserver, and
// reports false when it has answered.
func ReadBody(w http.ResponseWriter, req, out *http.Request) bool {
	out.Body, out.GetBody = http.NoBody, nil
	if req.ContentLength > MaxBodyBytes {
		writeTooLarge(w, req)
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBodyBytes))
	if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
		writeTooLarge(w, req)
		return false
	}
	if err != nil {
		if req.Context().Err() == nil {
			WriteStatus(w, req, http.StatusBadRequest, metav1.StatusReasonBadRequest, "kwrec replay: reading the request body: "+err.Error())
		}
		return false
	}
	if len(b) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(b))
	}
	out.ContentLength = int64(len(b))
	return true
}

func writeTooLarge(w http.ResponseWriter, req *http.Request) {
	WriteStatus(w, req, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, fmt.Sprintf("Request entity too large: limit is %d", MaxBodyBytes))
}

// WriteStatus answers a failure Status, in protobuf when the request
// negotiates it (client-go's typed clients), JSON otherwise.
func WriteStatus(w http.ResponseWriter, req *http.Request, code int, reason metav1.StatusReason, msg string) {
	proto, _ := wire.Negotiate(req.Header.Get("Accept"))
	w.Header().Set("Content-Type", wire.MediaJSON)
	if proto {
		w.Header().Set("Content-Type", wire.MediaProtobuf)
	}
	w.WriteHeader(code)
	w.Write(wire.StatusBody(wire.Status(code, reason, msg, 0), proto))
}

// Compressible reports whether kube-apiserver would gzip its answer to req
// for a client that accepts it: not a watch, for which it does only for a
// streaming list (sendInitialEvents, the WatchListCompression feature, on
// since v1.37) and never for a plain watch. Go's transport asks every
// server for gzip on the client's behalf, so without this every watch
// would pay a compressor per watcher, most of the CPU of a fan-out.
func Compressible(req *http.Request) bool {
	q := req.URL.Query()
	return !wire.IsWatch(q) || q.Get("sendInitialEvents") == "true"
}
