package recorder

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
)

// Exchange is what a [Redactor] may edit before it is written. A redactor
// is called once for the request (Response and Frame nil), once for the
// response head (Frame nil) and once per body frame. Edit the part the
// call is about: the request is already written when the response head is
// redacted, and so on.
type Exchange struct {
	Request  *cassettes.Request
	Response *cassettes.Response
	Frame    *cassettes.Frame

	rec  *Recorder
	meta *exMeta // what the built-in redactions parse from the heads, shared by a stream's frames
}

// exMeta is what the built-in redactions read from an exchange's request
// and response heads. Every frame of a stream has the same heads: the
// stream parses them once, not once per frame and redaction.
type exMeta struct {
	respType, reqType     string // media types
	secretPath, tokenPath bool   // see sensitivePath
}

func (ex *Exchange) info() *exMeta {
	if ex.meta == nil {
		m := &exMeta{}
		if ex.Response != nil {
			m.respType, _, _ = mime.ParseMediaType(ex.Response.Header.Get("Content-Type"))
		}
		if ex.Request != nil {
			m.reqType, _, _ = mime.ParseMediaType(ex.Request.Header.Get("Content-Type"))
			m.secretPath, m.tokenPath = sensitivePath(ex.Request.URL)
		}
		ex.meta = m
	}
	return ex.meta
}

// body returns the body the call is about and its media type.
func (ex *Exchange) body() (*[]byte, string) {
	switch {
	case ex.Frame != nil && ex.Response != nil:
		return &ex.Frame.Data, ex.info().respType
	case ex.Response == nil && ex.Request.Body != nil:
		return &ex.Request.Body, ex.info().reqType
	}
	return nil, ""
}

// Redactor edits an [Exchange] in place.
type Redactor func(*Exchange)

// Redaction is a named redaction rule. The name is listed in the cassette
// header (see [Header]), so a reader knows what was removed.
type Redaction struct {
	Name   string
	Redact Redactor
}

// Redacted replaces secret header values and secret strings.
const Redacted = "REDACTED"

// redactedBase64 replaces every value of a Secret's data: base64 of
// [Redacted], so the object still decodes.
const redactedBase64 = "UkVEQUNURUQ="

// protobufPlaceholder replaces a protobuf body or frame that holds
// something secret the recorder could not decode to redact selectively.
// Never leaking wins over replaying it.
const protobufPlaceholder = "kwrec: protobuf data removed: it holds secrets that could not be decoded to redact them"

// DefaultRedactions returns the built-in rules a [Recorder] applies unless
// [Options.DisableRedaction] is set:
//
//   - header:Authorization, header:Proxy-Authorization, header:Cookie,
//     header:Set-Cookie: every value replaced by [Redacted], in requests
//     and responses.
//   - header:Sec-WebSocket-Protocol:bearer: the bearer token client-go puts
//     in a WebSocket subprotocol.
//   - bearer-token:everywhere: every bearer token seen in an Authorization
//     header or set in a [rest.Config] given to [Recorder.WrapConfig] is
//     scrubbed from every later URL, header, body and frame (a protobuf
//     body holding one is replaced by a placeholder text).
//   - body:secrets: in JSON and protobuf bodies, requests and responses
//     (get, list, watch events, tables), each value of a Secret's data
//     (by [Redacted] in base64) and stringData (by [Redacted]), and its
//     kubectl.kubernetes.io/last-applied-configuration annotation.
//   - body:tokens: TokenRequest status.token and TokenReview spec.token.
//
// A body that names a Secret or token kind but cannot be parsed is
// replaced whole: JSON by a {"kwrec":"redacted"} object, protobuf by
// the text "kwrec: protobuf data removed: ...", which never decodes:
// never leaking wins over replaying it.
func DefaultRedactions() []Redaction {
	return []Redaction{
		headerRule("Authorization"),
		headerRule("Proxy-Authorization"),
		headerRule("Cookie"),
		headerRule("Set-Cookie"),
		{Name: "header:Sec-WebSocket-Protocol:bearer", Redact: redactWebSocketToken},
		{Name: "bearer-token:everywhere", Redact: scrubTokens},
		{Name: "body:secrets", Redact: func(ex *Exchange) { redactBody(ex, true, false) }},
		{Name: "body:tokens", Redact: func(ex *Exchange) { redactBody(ex, false, true) }},
	}
}

// redactionNames lists the names of the rules a recorder with opts
// applies, for [cassettes.Header.Redactions]. It is empty only when
// redaction is explicitly off and no rule was added.
func redactionNames(opts Options) []string {
	var rules []Redaction
	if !opts.DisableRedaction {
		rules = DefaultRedactions()
	}
	names := []string{}
	for _, r := range append(rules, opts.Redactions...) {
		names = append(names, r.Name)
	}
	return names
}

// Header returns the header of a cassette recorded with opts from a
// server of version server ("v1.37.2", may be empty): recorded now (by
// opts.Clock), listing the names of the rules a recorder with opts
// applies (empty only when redaction is off and no rule was added). Give
// it to [cassettes.Create].
func Header(server string, opts Options) cassettes.Header {
	h := cassettes.Header{Version: cassettes.Version, Server: server, Redactions: redactionNames(opts), RecordedAt: time.Now().UTC()}
	if opts.Clock != nil {
		h.RecordedAt = opts.Clock.Now().UTC()
	}
	return h
}

func (r *Recorder) redact(ex *Exchange) {
	ex.rec = r
	for _, rule := range r.rules {
		rule.Redact(ex)
	}
}

func headerRule(name string) Redaction {
	redactIn := func(h http.Header) {
		if vs, ok := h[http.CanonicalHeaderKey(name)]; ok {
			for i := range vs {
				vs[i] = Redacted
			}
		}
	}
	return Redaction{Name: "header:" + name, Redact: func(ex *Exchange) {
		switch {
		case ex.Frame != nil:
		case ex.Response != nil:
			redactIn(ex.Response.Header)
		default:
			redactIn(ex.Request.Header)
		}
	}}
}

const wsBearerPrefix = "base64url.bearer.authorization.k8s.io."

func redactWebSocketToken(ex *Exchange) {
	if ex.Response != nil {
		return
	}
	vs := ex.Request.Header[http.CanonicalHeaderKey("Sec-WebSocket-Protocol")]
	for i, v := range vs {
		parts := strings.Split(v, ",")
		for j, p := range parts {
			if t := strings.TrimSpace(p); strings.HasPrefix(t, wsBearerPrefix) {
				parts[j] = " " + wsBearerPrefix + Redacted
				if j == 0 {
					parts[j] = wsBearerPrefix + Redacted
				}
			}
		}
		vs[i] = strings.Join(parts, ",")
	}
}

// minToken is the shortest bearer token scrubbed everywhere; shorter
// strings would match innocent bytes.
const minToken = 8

func (r *Recorder) learnToken(tok string) {
	if len(tok) < minToken {
		return
	}
	r.mu.Lock()
	r.tokens[tok] = struct{}{}
	r.mu.Unlock()
}

// learnFromHeader remembers the bearer token of an Authorization header,
// before the header is redacted.
func (r *Recorder) learnFromHeader(h http.Header) {
	if r.opts.DisableRedaction {
		return
	}
	for _, v := range h.Values("Authorization") {
		if scheme, tok, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "bearer") {
			r.learnToken(strings.TrimSpace(tok))
		}
	}
}

func (r *Recorder) knownTokens() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	toks := make([]string, 0, len(r.tokens))
	for t := range r.tokens {
		toks = append(toks, t)
	}
	return toks
}

func scrubTokens(ex *Exchange) {
	if ex.rec == nil {
		return
	}
	toks := ex.rec.knownTokens()
	if len(toks) == 0 {
		return
	}
	scrubHeader := func(h http.Header) {
		for _, vs := range h {
			for i, v := range vs {
				for _, t := range toks {
					v = strings.ReplaceAll(v, t, Redacted)
				}
				vs[i] = v
			}
		}
	}
	switch {
	case ex.Frame != nil:
	case ex.Response != nil:
		scrubHeader(ex.Response.Header)
	default:
		for _, t := range toks {
			ex.Request.URL = strings.ReplaceAll(ex.Request.URL, t, Redacted)
		}
		scrubHeader(ex.Request.Header)
	}
	body, mt := ex.body()
	if body == nil {
		return
	}
	for _, t := range toks {
		if !bytes.Contains(*body, []byte(t)) {
			continue
		}
		if mt == protobufType {
			*body = []byte(protobufPlaceholder)
			return
		}
		*body = bytes.ReplaceAll(*body, []byte(t), []byte(Redacted))
	}
}

const protobufType = "application/vnd.kubernetes.protobuf"

// sensitivePath reports whether a request path is about secrets or
// tokens: there, every object is treated as a Secret or token holder, so
// that list items (which carry no kind), tables and patches are covered.
func sensitivePath(rawURL string) (secret, token bool) {
	path, _, _ := strings.Cut(rawURL, "?")
	seg := strings.Split(path, "/")
	for i, s := range seg {
		switch s {
		case "secrets":
			secret = true
		case "tokenreviews", "tokenrequests":
			token = true
		case "token":
			token = i > 0 && i >= 2 && seg[i-2] == "serviceaccounts"
		}
	}
	return secret, token
}

var (
	markSecret = []byte(`Secret`)
	markTokenR = []byte(`TokenRe`) // TokenRequest, TokenReview
)

// redactBody applies the secrets or the tokens rule to the body the call
// is about.
func redactBody(ex *Exchange, secrets, tokens bool) {
	body, mt := ex.body()
	if body == nil || len(*body) == 0 {
		return
	}
	secretPath, tokenPath := ex.info().secretPath, ex.info().tokenPath
	secretCtx := secrets && secretPath
	tokenCtx := tokens && tokenPath
	mark := (secrets && bytes.Contains(*body, markSecret)) || (tokens && bytes.Contains(*body, markTokenR))
	if !secretCtx && !tokenCtx && !mark {
		return
	}
	rules := objRules{secrets: secrets, tokens: tokens, secretCtx: secretCtx, tokenCtx: tokenCtx}
	switch {
	case mt == protobufType:
		*body = redactProto(*body, ex.Frame != nil && isProtoWatch(ex.Response), rules)
	case mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "" && json.Valid(bytes.TrimSpace(*body)):
		*body = redactJSON(*body, rules)
	case secretCtx || tokenCtx:
		// YAML, form data or anything else on a secret path: not parsed,
		// so removed.
		*body = []byte(`{"kwrec":"redacted"}`)
	}
}

func isProtoWatch(r *cassettes.Response) bool {
	if r == nil {
		return false
	}
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return params["stream"] == "watch"
}

// objRules says which objects to redact.
type objRules struct {
	secrets, tokens     bool
	secretCtx, tokenCtx bool
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// redactJSON redacts one JSON value (with its surrounding whitespace kept).
// A body that cannot be parsed is replaced whole.
func redactJSON(data []byte, rules objRules) []byte {
	trimmed := bytes.TrimRight(data, " \t\r\n")
	tail := data[len(trimmed):]
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return append([]byte(`{"kwrec":"redacted"}`), tail...)
	}
	if !rules.walk(v, false) {
		return data
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return append([]byte(`{"kwrec":"redacted"}`), tail...)
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), tail...)
}

// walk redacts v in place and reports whether it changed anything.
// asSecret is set for the items of a SecretList.
func (r objRules) walk(v any, asSecret bool) bool {
	changed := false
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			changed = r.walk(e, asSecret) || changed
		}
	case map[string]any:
		kind, _ := x["kind"].(string)
		_, hasMeta := x["metadata"]
		_, hasData := x["data"]
		_, hasStringData := x["stringData"]
		if r.secrets && (kind == "Secret" || asSecret || r.secretCtx && (hasMeta || hasData || hasStringData)) {
			changed = redactSecretJSON(x) || changed
		}
		if r.tokens && (kind == "TokenRequest" || r.tokenCtx) {
			changed = redactField(x, "status", "token") || changed
		}
		if r.tokens && (kind == "TokenReview" || r.tokenCtx) {
			changed = redactField(x, "spec", "token") || changed
		}
		itemsAsSecret := asSecret || kind == "SecretList"
		for k, e := range x {
			changed = r.walk(e, itemsAsSecret && k == "items") || changed
		}
	}
	return changed
}

func redactSecretJSON(x map[string]any) bool {
	changed := false
	if m, ok := x["data"].(map[string]any); ok {
		for k := range m {
			m[k] = redactedBase64
			changed = true
		}
	}
	if m, ok := x["stringData"].(map[string]any); ok {
		for k := range m {
			m[k] = Redacted
			changed = true
		}
	}
	if md, ok := x["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, ok := ann[lastApplied]; ok {
				ann[lastApplied] = Redacted
				changed = true
			}
		}
	}
	return changed
}

func redactField(x map[string]any, parent, field string) bool {
	m, ok := x[parent].(map[string]any)
	if !ok {
		return false
	}
	if s, ok := m[field].(string); ok && s != "" && s != Redacted {
		m[field] = Redacted
		return true
	}
	return false
}

// RedactInteraction applies the redactions a [Recorder] with opts applies
// (see [DefaultRedactions]) to in, recorded some other way: the request,
// the response head, then each frame. replay's Overlay writes use it, so
// that a Secret the code under test writes does not land in a cassette.
func RedactInteraction(in *cassettes.Interaction, opts Options) {
	r := &Recorder{opts: opts, tokens: map[string]struct{}{}}
	if !opts.DisableRedaction {
		r.rules = append(r.rules, DefaultRedactions()...)
	}
	r.rules = append(r.rules, opts.Redactions...)
	ex := &Exchange{Request: &in.Request}
	r.redact(ex)
	if in.Response == nil {
		return
	}
	ex.Response = in.Response
	r.redact(ex)
	for i := range in.Frames {
		ex.Frame = &in.Frames[i]
		r.redact(ex)
	}
}
