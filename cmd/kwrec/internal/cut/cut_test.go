package cut_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/internal/timepoint"
)

var update = flag.Bool("update", false, "rewrite the golden cuts in testdata")

// golden compares got with testdata/name, or writes it there with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

func point(t *testing.T, s string) timepoint.Point {
	t.Helper()
	if s == "" {
		return timepoint.Point{}
	}
	p, err := timepoint.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		in             string // default rec.kwrec
		golden         string
		dropped        []string
	}{{
		name: "a cut from a duration to a duration starts with the lists at the state then and ends the watches there",
		from: "250ms", to: "3s", golden: "cut-250ms-3s.kwrec",
		dropped: []string{"drop:request=3,frame=1"},
	}, {
		name: "a cut from a resourceVersion starts just after the event that recorded it",
		from: "rv=102", to: "rv=104", golden: "cut-rv102-rv104.kwrec",
		dropped: []string{"drop:request=3,frame=1"},
	}, {
		name: "a cut from an RFC 3339 time to the end keeps the recorded ends",
		from: "2026-12-01T07:00:01.5Z", golden: "cut-1.5s-end.kwrec",
		dropped: []string{"watch-error:request=3,after=3,code=410", "drop:request=3,frame=1", "watch-error:resource=configmaps,rv=104,code=410"},
	}, {
		name: "a cut from the start is the recording up to its end point",
		to:   "200ms", golden: "cut-start-200ms.kwrec",
		dropped: []string{"watch-error:request=3,after=3,code=410", "watch-error:resource=configmaps,rv=104,code=410"},
	}, {
		name: "a streaming list with no interaction before the point to take a list's place sends the state as its initial events",
		in:   "streaming.kwrec", from: "1s", golden: "cut-streaming-1s.kwrec",
	}, {
		name: "a collection recorded in kubectl's Table form also starts with a Table of the state, its rows as recorded",
		in:   "table.kwrec", from: "rv=102", golden: "cut-table-rv102.kwrec",
	}, {
		name: "a collection whose list is in progress at the point leaves the place of another's list to it",
		in:   "in-progress.kwrec", from: "1s", golden: "cut-in-progress-1s.kwrec",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := "rec.kwrec"
			if tc.in != "" {
				in = tc.in
			}
			rec, err := cut.Read(filepath.Join("testdata", in))
			if err != nil {
				t.Fatal(err)
			}
			res, err := cut.Cut(rec, point(t, tc.from), point(t, tc.to))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.dropped, res.Dropped); d != "" {
				t.Errorf("dropped edits (-want +got):\n%s", d)
			}
			var buf bytes.Buffer
			if err := res.Write(&buf, cassettes.WriterOptions{}); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.golden, buf.Bytes())
			// The cut is a whole cassette, and a whole recording: every
			// collection it watches it lists first.
			if _, err := cassettes.Read(bytes.NewReader(buf.Bytes()), tc.golden); err != nil {
				t.Fatalf("reading the cut: %v", err)
			}
			out := filepath.Join(t.TempDir(), tc.golden)
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			whole, err := cut.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := whole.CheckWhole(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCutRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           string
		is             error
	}{{
		name: "a start after the end",
		from: "3s", to: "1s",
		want: "empty window: from 3s (3s after the start) is after to 1s (1s)",
		is:   cut.ErrOrder,
	}, {
		name: "a duration past the recording's end",
		from: "1h",
		want: "outside the recording: 1h is 1h0m0s after its start (2026-12-01T07:00:00Z), and it lasts 5.026s (to 2026-12-01T07:00:05.026Z)",
		is:   timepoint.ErrOutside,
	}, {
		name: "a time before the recording's start",
		from: "2026-12-01T06:00:00Z",
		want: "outside the recording: 2026-12-01T06:00:00Z is before its start (2026-12-01T07:00:00Z)",
		is:   timepoint.ErrOutside,
	}, {
		name: "a resourceVersion nothing recorded",
		to:   "rv=99",
		want: "resourceVersion not recorded: rv=99: no recorded list or watch event has resourceVersion 99",
		is:   timepoint.ErrUnknownRV,
	}, {
		name: "a resourceVersion window backwards",
		from: "rv=104", to: "rv=101",
		want: "empty window: from rv=104 (1.313s after the start) is after to rv=101 (113ms)",
		is:   cut.ErrOrder,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := cut.Read("testdata/rec.kwrec")
			if err != nil {
				t.Fatal(err)
			}
			_, err = cut.Cut(rec, point(t, tc.from), point(t, tc.to))
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %q (wrapping %v)", err, tc.want, tc.is)
			}
		})
	}
}
