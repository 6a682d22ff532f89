package wire

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// StatusProto is st as an enveloped protobuf body.
func StatusProto(st *metav1.Status) []byte {
	raw, _ := st.Marshal()
	return Envelope("v1", "Status", raw)
}

// ReasonFor is the metav1.StatusReason the API server uses for code, ""
// for codes it has none for.
func ReasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonExpired
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusInternalServerError:
		return metav1.StatusReasonInternalError
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	}
	return ""
}
