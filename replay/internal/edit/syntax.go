package edit

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Syntax is the grammar of edits: KIND:key=value,key=value, with the keys
// each kind takes, required ones marked with a leading '!'. Errors wrap
// Bad.
type Syntax struct {
	Keys map[string][]string
	Bad  error
}

// Parse splits s, checks its kind and keys, and calls set for each
// key=value in order until set fails; then it checks that every required
// key was given. It returns the kind and the keys seen. Errors say which
// keys the kind takes.
func (sx Syntax) Parse(s string, set func(k, v string) error) (kind string, seen map[string]bool, err error) {
	kind, args, _ := strings.Cut(strings.TrimSpace(s), ":")
	keys, ok := sx.Keys[kind]
	if !ok {
		return kind, nil, fmt.Errorf("%w %q: unknown kind %q; kinds are %s", sx.Bad, s, kind, sx.kinds())
	}
	seen = map[string]bool{}
	if args != "" {
		for _, kv := range strings.Split(args, ",") {
			if err := sx.pair(s, kind, kv, seen, set); err != nil {
				return kind, nil, err
			}
		}
	}
	for _, want := range keys {
		if name, req := strings.CutPrefix(want, "!"); req && !seen[name] {
			return kind, nil, sx.Error(s, kind, "missing %s", name)
		}
	}
	return kind, seen, nil
}

// pair checks one key=value of s and sets it.
func (sx Syntax) pair(s, kind, kv string, seen map[string]bool, set func(k, v string) error) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || v == "" {
		return sx.Error(s, kind, "%q is not key=value", kv)
	}
	if !slices.ContainsFunc(sx.Keys[kind], func(want string) bool { return strings.TrimPrefix(want, "!") == k }) {
		return sx.Error(s, kind, "unknown key %q", k)
	}
	if seen[k] || (k == "code" && seen["status"]) || (k == "status" && seen["code"]) {
		return sx.Error(s, kind, "key %q given twice", k)
	}
	seen[k] = true
	if err := set(k, v); err != nil {
		return sx.Error(s, kind, "%s=%s: %v", k, v, err)
	}
	return nil
}

// Error is the error for edit s of kind: the problem, then the keys kind
// takes.
func (sx Syntax) Error(s, kind, format string, a ...any) error {
	takes := strings.ReplaceAll(strings.Join(sx.Keys[kind], ","), "!", "required ")
	return fmt.Errorf("%w %q: %s; %s takes %s", sx.Bad, s, fmt.Sprintf(format, a...), kind, takes)
}

func (sx Syntax) kinds() string {
	var ks []string
	for k := range sx.Keys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

// Positive parses v as a whole number of at least min.
func Positive(v string, min int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("not a number")
	}
	if n < min {
		return 0, fmt.Errorf("must be at least %d", min)
	}
	return n, nil
}

// Duration parses v, the value of key, as a duration above 0 (at least 0
// with zero).
func Duration(key, v string, zero bool) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, err
	case zero && d < 0:
		return 0, fmt.Errorf("%s must not be negative", key)
	case !zero && d <= 0:
		return 0, fmt.Errorf("%s must be positive", key)
	}
	return d, nil
}

// Scale parses a warp's scale: a finite number above 0.
func Scale(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && (!(f > 0) || math.IsInf(f, 0)) {
		err = fmt.Errorf("scale must be a finite number > 0")
	}
	return f, err
}

// Status parses an HTTP status code.
func Status(v string) (int, error) {
	n, err := Positive(v, 100)
	if err == nil && n > 999 {
		err = fmt.Errorf("%d is not an HTTP status", n)
	}
	return n, err
}

// Name checks a resource, group or namespace name: nothing that would
// change a URL's path or query.
func Name(v string) error {
	if strings.ContainsAny(v, "/?&#") {
		return fmt.Errorf("not a name")
	}
	return nil
}

// Reason checks a metav1.StatusReason: one CamelCase word (Expired,
// TooManyRequests); nothing else can round-trip a flag.
func Reason(v string) error {
	ok := v != "" && !strings.ContainsFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	if !ok {
		return fmt.Errorf("a reason is one word of letters, such as Expired or ServiceUnavailable")
	}
	return nil
}

// verbs are the verbs an error edit anchored by resource can name.
var verbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// CheckVerb checks an API verb an edit names.
func CheckVerb(v string) error {
	if !slices.Contains(verbs, v) {
		return fmt.Errorf("verbs are %s", strings.Join(verbs, ", "))
	}
	return nil
}
