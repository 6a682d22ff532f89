package diff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// oracle is the canonical form as diff first wrote it: the object decoded
// into any, pruned, without the top-level kind and apiVersion, marshaled.
func oracle(t testing.TB, raw []byte, pats []pattern) ([]byte, bool) {
	t.Helper()
	obj, err := decode(raw)
	if err != nil {
		return nil, false
	}
	obj = prune(obj, nil, pats)
	if m, ok := obj.(map[string]any); ok {
		delete(m, "kind")
		delete(m, "apiVersion")
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func defaultPatterns(t testing.TB, extra ...string) []pattern {
	t.Helper()
	pats, err := patterns(Options{Ignore: extra})
	if err != nil {
		t.Fatal(err)
	}
	return pats
}

func TestTheFastCanonicalFormIsTheDecodedOne(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		ignore []string
		fast   bool // the scanner reads it, without the decoder
	}{
		{"an object the API server wrote keeps its order", `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default"},"data":{"a":"1","b":"2"}}`, nil, true},
		{"members out of order are sorted as a map's keys", `{"metadata":{"namespace":"n","name":"a"},"data":{"z":"1","a":"2","A":"3","ab":"4"}}`, nil, true},
		{"volatile fields are dropped at every depth", `{"metadata":{"name":"a","uid":"u","resourceVersion":"9","creationTimestamp":"2026-01-01T00:00:00Z","managedFields":[{"manager":"m","time":"t"}]},"status":{"conditions":[{"type":"Ready","lastTransitionTime":"t","lastProbeTime":null,"status":"True"}]}}`, nil, true},
		{"null, empty objects and empty arrays are dropped, also once pruned", `{"metadata":{"name":"a","labels":{},"annotations":null,"finalizers":[]},"spec":{"x":{"y":null,"z":{}}},"data":{"k":""}}`, nil, true},
		{"array elements are pruned but never dropped", `{"metadata":{"name":"a"},"items":[null,{},[],{"a":null},{"b":1},[null]]}`, nil, true},
		{"numbers keep their spelling", `{"metadata":{"name":"a"},"n":[1,-0,1.50,1e3,-2.5E-3,10000000000000000000001]}`, nil, true},
		{"true and false are kept, null dropped", `{"metadata":{"name":"a"},"t":true,"f":false,"n":null}`, nil, true},
		{"whitespace anywhere is dropped", " {\n \"metadata\" : { \"name\" : \"a\" } ,\t\"data\":[ 1 , 2 ] } ", nil, true},
		{"strings json.Marshal escapes are written as it escapes them", `{"metadata":{"name":"a"},"data":{"html":"<a href=\"x\">&amp;</a>","ctl":"\u0001\t\n","u":"\u00e9\u2028","e":"caf\u00e9"}}`, nil, true},
		{"keys with escapes sort by what they hold", `{"metadata":{"name":"a"},"data":{"b":"1","\u0061":"2","c\"d":"3","<k>":"4"}}`, nil, true},
		{"a repeated key keeps its last value", `{"metadata":{"name":"a"},"data":{"k":"1","k":"2"},"x":{"k":"1","k":null}}`, nil, true},
		{"non-ASCII text is kept as is", `{"metadata":{"name":"é"},"data":{"日本":"語","z":"ü"}}`, nil, true},
		{"ignore paths with globs, indexes and any-index apply", `{"metadata":{"name":"a","labels":{"app":"x","app.kubernetes.io/name":"y"}},"spec":{"containers":[{"image":"i","name":"c"},{"image":"j","name":"d"}]},"data":{"abc":"1","abd":"2","x":"3"}}`, []string{`.metadata.labels["app.kubernetes.io/name"]`, ".spec.containers[].image", ".data.ab?", ".spec.containers[1]"}, true},
		{"an ignore path naming an index drops nothing, as it only covers members", `{"metadata":{"name":"a"},"items":[{"a":1},{"a":2}]}`, []string{".items[0]"}, true},
		{"kind and apiVersion are dropped at the top only", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"},"spec":{"kind":"x","apiVersion":"y"}}`, nil, true},
		{"an object of ignored members only is empty, and dropped", `{"metadata":{"name":"a"},"status":{"conditions":[{"lastTransitionTime":"t"}]},"x":{"uid":"u"}}`, []string{".x.uid"}, true},
		{"invalid UTF-8 is read as the decoder reads it", "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"\xff\"}}", nil, true},
		{"a bad escape in an ignored field goes through the decoder", `{"metadata":{"name":"a","uid":"\x"}}`, nil, false},
		{"a number JSON does not allow goes through the decoder", `{"metadata":{"name":"a"},"n":01}`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pats := defaultPatterns(t, tt.ignore...)
			want, ok := oracle(t, []byte(tt.raw), pats)
			c := canonizer{pats: pats}
			got, fast := c.fast([]byte(tt.raw))
			if fast != tt.fast {
				t.Errorf("read by the scanner = %v, want %v", fast, tt.fast)
			}
			if fast {
				if d := cmp.Diff(string(want), string(got)); d != "" {
					t.Errorf("fast canonical form (-decoded +fast):\n%s", d)
				}
			}
			got, err := c.canonical([]byte(tt.raw))
			if !ok {
				if err == nil {
					t.Errorf("canonical of JSON the decoder refuses = %s, want its error", got)
				}
				return
			}
			if err != nil || string(got) != string(want) {
				t.Errorf("canonical = %s, %v; want %s", got, err, want)
			}
		})
	}
}

func TestInvalidJSONFailsAsTheDecoderFails(t *testing.T) {
	c := canonizer{pats: defaultPatterns(t)}
	_, err := c.canonical([]byte(`{"metadata":{"name":"a"},"x":tru}`))
	if want := "invalid character '}' in literal true (expecting 'e')"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func FuzzCanonicalIsTheDecodedOne(f *testing.F) {
	for _, s := range []string{
		`{"kind":"ConfigMap","metadata":{"name":"a","uid":"u"},"data":{"b":"1","a":"\u003c"}}`,
		`{"a":[{},null,[]],"b":{"c":null},"a":1}`,
		`{"status":{"conditions":[{"lastProbeTime":"x","type":"t"}]}}`,
		`{"x":1.5e-3,"y":"\ud800","z":"\u2029"}`,
	} {
		f.Add(s)
	}
	pats := defaultPatterns(f, ".data.a*", ".x[]", `.metadata.labels["a.b"]`)
	f.Fuzz(func(t *testing.T, raw string) {
		if !strings.HasPrefix(strings.TrimLeft(raw, " \t\r\n"), "{") {
			return
		}
		want, ok := oracle(t, []byte(raw), pats)
		c := canonizer{pats: pats}
		got, fast := c.fast([]byte(raw))
		if !ok && fast {
			t.Errorf("the scanner reads %q, which the decoder refuses", raw)
		}
		if !ok || !fast {
			return
		}
		if string(got) != string(want) {
			t.Errorf("fast canonical form of %q:\n got %s\nwant %s", raw, got, want)
		}
	})
}
