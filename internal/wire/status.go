package wire

import (
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Status returns the failure Status the API server sends for code.
// retryAfter > 0 goes in details.retryAfterSeconds, where client-go's
// apierrors.SuggestsClientDelay looks (the Retry-After header alone is not
// enough once the body is a Status).
func Status(code int, reason metav1.StatusReason, message string, retryAfter int) *metav1.Status {
	if reason == "" {
		reason = ReasonFor(code)
	}
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: message, Reason: reason, Code: int32(code),
	}
	if retryAfter > 0 {
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
	}
	return st
}

// StatusJSON is st as the API server writes it in JSON, newline-terminated.
// A Status without kind and apiVersion (as apierrors makes them) gets
// them: clients only decode a Status that says it is one.
func StatusJSON(st *metav1.Status) []byte {
	if st.Kind == "" {
		c := *st
		c.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		st = &c
	}
	b, _ := json.Marshal(st) // a Status always marshals
	return append(b, '\n')
}

// StatusBody is st as a response body: enveloped protobuf (proto) or
// JSON.
func StatusBody(st *metav1.Status, proto bool) []byte {
	if proto {
		return StatusProto(st)
	}
	return StatusJSON(st)
}

// StatusProto is st as an enveloped protobuf body.
func StatusProto(st *metav1.Status) []byte {
	raw, _ := st.Marshal()
	return Envelope("v1", "Status", raw)
}

// ReasonFor is the metav1.StatusReason the API server uses for code, as
// client-go's apierrors reads one from a code (a 410 is Expired: a
// resourceVersion too old), "" for codes it has none for.
func ReasonFor(code int) metav1.StatusReason {
	if code == http.StatusGone {
		return metav1.StatusReasonExpired
	}
	r := apierrors.NewGenericServerResponse(code, "", schema.GroupResource{}, "", "", 0, false).ErrStatus.Reason
	if r == metav1.StatusReasonUnknown {
		return ""
	}
	return r
}
