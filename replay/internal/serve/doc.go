// Package serve is the HTTP(S) machinery of replay.Server: a loopback
// listener with a certificate signed by a CA made for it alone ([Listen]),
// an http.Server configured as kube-apiserver configures its own (HTTP/2
// limits, timeouts), the hardening against clients that misbehave (a
// bearer token compared in constant time, bounded headers and bodies), and
// the copying of a replayed body to the client, frame by frame.
//
// Only package replay uses it: replay.Server is its public face, which
// answers each request through a replay.Replayer and says, in its doc
// comment, what the limits here are.
package serve
