// Package wire holds the Kubernetes API wire facts that recording, replay
// and describing a cassette all need, once: what makes a request a watch,
// its timeoutSeconds, content negotiation between JSON and protobuf, the
// "k8s\x00" protobuf envelope and the length-prefixed protobuf watch frame,
// metav1.Status bodies, and reading an object's metadata from its JSON or
// protobuf bytes without a scheme.
//
// Protobuf without a scheme works because every built-in object's message
// has its ObjectMeta as field 1 (a list has its ListMeta as field 1 and its
// items as field 2), and a whole body is "k8s\x00" followed by a
// runtime.Unknown{typeMeta=1, raw=2, contentEncoding=3, contentType=4}. A
// protobuf watch frame is a 4-byte big-endian length, then
// metav1.WatchEvent{type=1, object=2 (RawExtension{raw=1})}, whose raw is
// itself an enveloped object.
package wire
