package replay_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/replay"
)

// FuzzParseEdit checks ParseEdit's contract on any input: it never panics,
// every error wraps [replay.ErrBadEdit], and every accepted edit prints to a
// string that parses back to the same edit, itself printing the same
// (parse → String → parse is a fixed point). Seeds are the examples of the
// syntax documented on [replay.Edit], plus edge cases of each key.
func FuzzParseEdit(f *testing.F) {
	for _, s := range []string{
		// the examples of the Edit doc comment, verbatim
		"error:request=3,status=503,retry-after=1",
		"error:request=1,match=/configmaps,status=500,reason=InternalError",
		"watch-error:request=2,after=1,code=410",
		"reset:request=2,after=3",
		"truncate:request=2,after=3",
		"warp:scale=10",
		"warp:cap=100ms",
		"pause:request=2,before=3,for=5s",
		"drop:request=2,frame=3",
		"dup:request=2,frame=3",
		// edges
		"watch-error:request=2,after=0",
		"watch-error:request=2,after=1,status=500",
		"warp:request=2,scale=0.5,cap=1s",
		"warp:match=/pods,scale=1e3",
		"error:match=/pods,status=429",
		"pause:match=watch,before=1,for=1h2m3.5s",
		" drop:request=1,frame=1 ",
		"error:request=1,status=999,reason=a:b=c",
		"error",
		"error:",
		"warp:",
		"explode:now",
		"error:request=1,status=500,status=501",
		"watch-error:request=1,after=1,code=410,status=410",
		"error:request=-1,status=500",
		"warp:scale=NaN",
		"warp:scale=inf",
		"warp:cap=-1s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := replay.ParseEdit(s)
		if err != nil {
			if !errors.Is(err, replay.ErrBadEdit) {
				t.Fatalf("ParseEdit(%q) error %v does not wrap ErrBadEdit", s, err)
			}
			if e != (replay.Edit{}) {
				t.Fatalf("ParseEdit(%q) failed (%v) but returned %+v", s, err, e)
			}
			return
		}
		str := e.String()
		back, err := replay.ParseEdit(str)
		if err != nil {
			t.Fatalf("ParseEdit(%q) = %+v, but its String() %q does not parse: %v", s, e, str, err)
		}
		if diff := cmp.Diff(e, back); diff != "" {
			t.Fatalf("ParseEdit(%q).String() = %q parses to another edit (-first +second):\n%s", s, str, diff)
		}
		if again := back.String(); again != str {
			t.Fatalf("String() is not stable for %q: %q then %q", s, str, again)
		}
	})
}
