package edit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/edit"
)

var errBad = errors.New("bad edit")

var syntax = edit.Syntax{Bad: errBad, Keys: map[string][]string{
	"pause": {"request", "!before", "for"},
	"drop":  {"request", "!frame"},
}}

func TestSyntaxParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // key=value pairs set, in order
		err      string
	}{
		{"pairs are set in order", " pause:for=1s,before=2 ", []string{"for=1s", "before=2"}, ""},
		{"an unknown kind names the kinds", "explode:now", nil, `bad edit "explode:now": unknown kind "explode"; kinds are drop, pause`},
		{"a missing required key", "drop:request=1", []string{"request=1"}, `bad edit "drop:request=1": missing frame; drop takes request,required frame`},
		{"not key=value", "drop:frame", nil, `bad edit "drop:frame": "frame" is not key=value; drop takes request,required frame`},
		{"an unknown key", "drop:frame=1,after=2", []string{"frame=1"}, `bad edit "drop:frame=1,after=2": unknown key "after"; drop takes request,required frame`},
		{"a key given twice", "drop:frame=1,frame=2", []string{"frame=1"}, `bad edit "drop:frame=1,frame=2": key "frame" given twice; drop takes request,required frame`},
		{"a value its setter refuses", "drop:frame=x", nil, `bad edit "drop:frame=x": frame=x: not a number; drop takes request,required frame`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set []string
			_, _, err := syntax.Parse(tc.in, func(k, v string) error {
				if _, err := edit.Positive(v, 0); k != "for" && err != nil {
					return err
				}
				set = append(set, k+"="+v)
				return nil
			})
			if d := cmp.Diff(tc.want, set); d != "" {
				t.Errorf("set (-want +got):\n%s", d)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err || !errors.Is(err, errBad)):
				t.Errorf("err = %v, want %s wrapping the sentinel", err, tc.err)
			}
		})
	}
}

func TestValues(t *testing.T) {
	check := func(name string, err error, want string) {
		t.Helper()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	_, err := edit.Positive("0", 1)
	check("Positive 0", err, "must be at least 1")
	_, err = edit.Duration("at", "0s", false)
	check("Duration 0s", err, "at must be positive")
	d, err := edit.Duration("cap", "0s", true)
	check("Duration 0s with zero", err, "")
	if d != 0 {
		t.Errorf("Duration = %v", d)
	}
	_, err = edit.Duration("cap", "-1s", true)
	check("Duration -1s", err, "cap must not be negative")
	_, err = edit.Scale("Inf")
	check("Scale Inf", err, "scale must be a finite number > 0")
	_, err = edit.Status("1000")
	check("Status 1000", err, "1000 is not an HTTP status")
	check("Name", edit.Name("config/maps"), "not a name")
	check("Reason", edit.Reason("Too Many"), "a reason is one word of letters, such as Expired or ServiceUnavailable")
	check("Reason Expired", edit.Reason("Expired"), "")
	check("CheckVerb", edit.CheckVerb("frob"), "verbs are get, list, watch, create, update, patch, delete, deletecollection")
}

func TestState(t *testing.T) {
	var s edit.State
	if s.Count(2) || !s.Count(2) || s.Count(2) {
		t.Error("Count did not report the 2nd request alone")
	}
	s.Fire("GET /api")
	s.Fire("GET /api")
	if s.Fired() != 2 {
		t.Errorf("Fired = %d, want 2", s.Fired())
	}
}

func TestVerb(t *testing.T) {
	for _, tc := range []struct{ method, target, want string }{
		{http.MethodGet, "/api/v1/namespaces/a/pods", "list"},
		{http.MethodGet, "/api/v1/namespaces/a/pods?watch=1", "watch"},
		{http.MethodGet, "/api/v1/namespaces/a/pods/p", "get"},
		{http.MethodPost, "/api/v1/namespaces/a/pods", "create"},
		{http.MethodPut, "/api/v1/namespaces/a/pods/p", "update"},
		{http.MethodPatch, "/api/v1/namespaces/a/pods/p", "patch"},
		{http.MethodDelete, "/api/v1/namespaces/a/pods/p", "delete"},
		{http.MethodDelete, "/api/v1/namespaces/a/pods", "deletecollection"},
		{http.MethodGet, "/version", ""},
		{http.MethodOptions, "/api/v1/pods", ""},
	} {
		_, got := edit.Verb(httptest.NewRequest(tc.method, tc.target, nil))
		if got != tc.want {
			t.Errorf("%s %s: verb %q, want %q", tc.method, tc.target, got, tc.want)
		}
	}
}

func TestAnchor(t *testing.T) {
	a := edit.Anchor{Resource: "deployments", Group: "apps", Namespace: "prod"}
	if got, want := a.What(), "deployments.apps in namespace prod"; got != want {
		t.Errorf("What = %q, want %q", got, want)
	}
	if !a.Names(apipath.Path{Group: "apps", Resource: "deployments", Namespace: "prod"}) ||
		a.Names(apipath.Path{Group: "apps", Resource: "deployments", Namespace: "dev"}) ||
		a.Names(apipath.Path{Resource: "deployments", Namespace: "prod"}) {
		t.Error("Names does not match group, resource and namespace")
	}
}

func TestContinueExpired(t *testing.T) {
	if edit.ContinueExpired("") != nil || edit.ContinueExpired("not a token") != nil {
		t.Error("no token, or one the server cannot read, expired")
	}
	tok, err := wire.EncodeContinue("a/b", "", 7)
	if err != nil {
		t.Fatal(err)
	}
	st := edit.ContinueExpired(tok)
	if st == nil || st.Code != http.StatusGone || st.Continue == "" || st.Continue == tok {
		t.Fatalf("ContinueExpired = %+v, want a 410 with a fresh token", st)
	}
}
