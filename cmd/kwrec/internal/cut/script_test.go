package cut_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
)

func TestScript(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{{
		name: "a script of the whole recording starts with the first lists and holds every change with its time",
		want: []string{
			"state configmaps default/a rv=90", "state configmaps default/b rv=95", "state namespaces /default rv=5",
			"113ms ADDED configmaps default/c rv=101", "213ms MODIFIED configmaps default/a rv=102",
			"313ms DELETED configmaps default/b rv=103", "1.313s ADDED configmaps default/d rv=104",
			"2.026s ADDED namespaces /x rv=105",
		},
	}, {
		name: "a script of a window starts with the state at its first point and times its changes from there",
		from: "rv=102", to: "1.5s",
		want: []string{
			"state configmaps default/a rv=102", "state configmaps default/b rv=95", "state configmaps default/c rv=101",
			"state namespaces /default rv=5",
			"100ms DELETED configmaps default/b rv=103", "1.1s ADDED configmaps default/d rv=104",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := cut.Read("testdata/rec.kwrec")
			if err != nil {
				t.Fatal(err)
			}
			s, err := rec.Script(point(t, tc.from), point(t, tc.to))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range s.Start {
				got = append(got, fmt.Sprintf("state %s %s/%s rv=%d", o.Resource, o.Namespace, o.Name, o.RV))
			}
			for _, c := range s.Changes {
				got = append(got, fmt.Sprintf("%v %s %s %s/%s rv=%d", c.At, c.Type, c.Resource, c.Namespace, c.Name, c.RV))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("the script (-want +got):\n%s", d)
			}
		})
	}
}
