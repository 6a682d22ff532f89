package table_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/kwrec/kwrec/internal/table"
)

func jsonRV(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Metadata.ResourceVersion
}

func typeMeta(t *testing.T, body []byte) (kind, apiVersion string) {
	t.Helper()
	var v struct{ Kind, APIVersion string }
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Kind, v.APIVersion
}

// fixture is testdata/live.txtar by file name.
type fixture map[string][]byte

func loadFixture(t *testing.T) fixture {
	t.Helper()
	a, err := txtar.ParseFile(liveFixture)
	if err != nil {
		t.Fatal(err)
	}
	fx := fixture{}
	for _, f := range a.Files {
		fx[f.Name] = f.Data
	}
	return fx
}

// lines splits a JSON lines file, each line keeping its newline.
func (fx fixture) lines(name string) [][]byte {
	lines := bytes.SplitAfter(fx[name], []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// index builds an Index from fixture files: whole Table list bodies
// (.json) and Table watch streams (.jsonl).
func (fx fixture) index(t *testing.T, names ...string) *table.Index {
	t.Helper()
	x := &table.Index{}
	for _, name := range names {
		if bytes.HasSuffix([]byte(name), []byte(".jsonl")) {
			for _, line := range fx.lines(name) {
				if err := x.AddWatchEvent(line); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			continue
		}
		if err := x.AddList(fx[name]); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return x
}

// plainVersions returns the versions of a plain JSON list's items, in
// order, and the list's resourceVersion.
func plainVersions(t *testing.T, body []byte) (rv string, vs []table.Version) {
	t.Helper()
	var l struct {
		Metadata struct{ ResourceVersion string }
		Items    []struct {
			Metadata struct{ Name, Namespace, ResourceVersion string }
		}
	}
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	for _, it := range l.Items {
		m := it.Metadata
		vs = append(vs, table.Version{Key: m.Namespace + "/" + m.Name, RV: m.ResourceVersion})
	}
	return l.Metadata.ResourceVersion, vs
}

// eventVersion returns a Table watch event's type and the version of its
// row's object.
func eventVersion(t *testing.T, line []byte) (typ string, v table.Version) {
	t.Helper()
	var e struct {
		Type   string
		Object struct {
			Rows []struct {
				Object struct {
					Metadata struct {
						Name, Namespace, ResourceVersion string
						Annotations                      map[string]string
					}
				}
			}
		}
	}
	if err := json.Unmarshal(line, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Object.Rows) != 1 {
		t.Fatalf("event has %d rows, want 1: %s", len(e.Object.Rows), line)
	}
	m := e.Object.Rows[0].Object.Metadata
	return e.Type, table.Version{Key: m.Namespace + "/" + m.Name, RV: m.ResourceVersion}
}

// comparable parses a Table, or a watch event holding one, for
// comparison, with each row's age blanked: the server computes ages when
// it answers, so a recorded row's age is the age it had then. ConfigMaps
// print Name, Data, Age: the age is the last cell.
func comparable(t *testing.T, b []byte) any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	tbl := v
	if obj, ok := v["object"].(map[string]any); ok {
		tbl = obj
	}
	rows, _ := tbl["rows"].([]any)
	for _, r := range rows {
		cells := r.(map[string]any)["cells"].([]any)
		cells[len(cells)-1] = "<age>"
	}
	return v
}
