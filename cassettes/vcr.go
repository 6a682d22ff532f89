package cassettes

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/dnaeon/go-vcr.v3/cassette"
	"gopkg.in/yaml.v3"
)

// VCRVersion is the go-vcr cassette format version read and written.
const VCRVersion = cassette.CassetteFormatV2

// ImportVCR reads a go-vcr v3 cassette (YAML, format version 2). Each
// go-vcr interaction becomes one interaction with its body as a single
// frame; go-vcr keeps no frame boundaries or start offsets, so each
// interaction starts when the previous one ended (its Duration after).
func ImportVCR(r io.Reader, name string) (*Cassette, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var vc cassette.Cassette
	if err := yaml.Unmarshal(data, &vc); err != nil {
		return nil, &ParseError{File: name, Offset: -1, Err: ErrNotCassette, Msg: "not a go-vcr YAML cassette: " + err.Error()}
	}
	if vc.Version != VCRVersion {
		return nil, &ParseError{File: name, Offset: -1, Err: ErrUnsupportedVersion,
			Msg: fmt.Sprintf("go-vcr cassette version %d; only version %d (go-vcr v3) is imported", vc.Version, VCRVersion)}
	}
	c := &Cassette{Header: Header{Version: Version, Labels: map[string]string{"imported-from": "go-vcr"}}}
	var at time.Duration
	for i, vi := range vc.Interactions {
		if vi == nil {
			continue
		}
		in := &Interaction{ID: i + 1, At: at,
			Request: Request{Method: vi.Request.Method, URL: vi.Request.URL, Header: vi.Request.Headers}}
		if vi.Request.Body != "" {
			in.Request.Body = []byte(vi.Request.Body)
		}
		resp := &Response{Status: vi.Response.Code, Header: vi.Response.Headers.Clone(), Latency: vi.Response.Duration}
		if resp.Header != nil {
			resp.Encoding = resp.Header.Get("Content-Encoding")
			resp.Header.Del("Content-Encoding")
		}
		in.Response = resp
		if vi.Response.Body != "" {
			in.Frames = []Frame{{Data: []byte(vi.Response.Body)}}
		}
		in.End = &End{Reason: EndEOF}
		c.Interactions = append(c.Interactions, in)
		at += vi.Response.Duration
	}
	return c, nil
}

// ExportOptions control [ExportVCR].
type ExportOptions struct {
	// SkipStreams drops watch interactions (and any with more than one
	// frame or no clean end), which go-vcr cannot replay; without it
	// such an interaction is an error wrapping [ErrLossyExport].
	SkipStreams bool
}

// ExportReport says what [ExportVCR] left out.
type ExportReport struct {
	// Skipped lists the IDs of the streaming interactions not exported.
	Skipped []int
}

// streaming reports whether in is a stream go-vcr cannot represent.
func streaming(in *Interaction) bool {
	if strings.Contains(in.Request.URL, "watch=") && !strings.Contains(in.Request.URL, "watch=false") && !strings.Contains(in.Request.URL, "watch=0") {
		return true
	}
	if in.Response != nil && strings.Contains(in.Response.Header.Get("Content-Type"), "stream=watch") {
		return true
	}
	return len(in.Frames) > 1 || in.End == nil || in.End.Reason != EndEOF
}

// ExportVCR writes c as a go-vcr v3 cassette (YAML, format version 2).
//
// What export loses, always: frame boundaries (each body is one string),
// frame timing and interaction start offsets (only the latency to headers
// survives as go-vcr's duration), the cassette header and stored edits.
// Streaming interactions (watches) cannot be exported at all: they are an
// error wrapping [ErrLossyExport] unless [ExportOptions.SkipStreams] is set,
// and the report lists those skipped. Bodies that are not valid UTF-8 are
// an error, as go-vcr stores bodies as YAML strings.
func ExportVCR(w io.Writer, c *Cassette, opts ExportOptions) (ExportReport, error) {
	var rep ExportReport
	vc := cassette.Cassette{Version: VCRVersion}
	for _, in := range c.Interactions {
		if in.Response == nil || streaming(in) {
			if !opts.SkipStreams {
				return rep, fmt.Errorf("interaction %d (%s %s) is a stream or has no complete response, which go-vcr cannot hold: %w; pass SkipStreams (kwrec convert --skip-streams) to leave it out", in.ID, in.Request.Method, in.Request.URL, ErrLossyExport)
			}
			rep.Skipped = append(rep.Skipped, in.ID)
			continue
		}
		body := in.Body()
		if !utf8.Valid(body) {
			return rep, fmt.Errorf("interaction %d (%s %s) has a binary body, which go-vcr stores as text: %w", in.ID, in.Request.Method, in.Request.URL, ErrLossyExport)
		}
		vi := &cassette.Interaction{ID: len(vc.Interactions)}
		vi.Request = cassette.Request{Method: in.Request.Method, URL: in.Request.URL, Headers: in.Request.Header,
			Body: string(in.Request.Body), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			ContentLength: int64(len(in.Request.Body))}
		if u := in.Request.URL; u != "" {
			if i := strings.Index(u, "://"); i >= 0 {
				rest := u[i+3:]
				if j := strings.IndexByte(rest, '/'); j >= 0 {
					vi.Request.Host = rest[:j]
				} else {
					vi.Request.Host = rest
				}
			}
		}
		h := in.Response.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		vi.Response = cassette.Response{Code: in.Response.Status,
			Status:  strconv.Itoa(in.Response.Status) + " " + http.StatusText(in.Response.Status),
			Headers: h, Body: string(body), Duration: in.Response.Latency,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: int64(len(body))}
		vc.Interactions = append(vc.Interactions, vi)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)
	if err := enc.Encode(&vc); err != nil {
		return rep, fmt.Errorf("go-vcr export: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return rep, err
}
