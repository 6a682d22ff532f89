package explore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// Diff compares two worlds as [World] writes them, object by object, and
// returns what differs ("" for nothing), each object named by its header
// ("configmaps kwrec-mirror/alpha-mirror") before its own diff
// (-reference +run), so that a diff whose context collapses still says
// which object it is.
func Diff(reference, run []byte) string {
	ref, got := objectsOf(reference), objectsOf(run)
	var names []string
	for n := range ref {
		names = append(names, n)
	}
	for n := range got {
		if _, ok := ref[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		r, inRef := ref[n]
		g, inRun := got[n]
		switch {
		case !inRun:
			fmt.Fprintf(&b, "%s: only in the reference run\n", n)
		case !inRef:
			fmt.Fprintf(&b, "%s: only in this run\n%s", n, g)
		case r != g:
			fmt.Fprintf(&b, "%s (-reference +this run):\n%s", n, cmp.Diff(r, g))
		}
	}
	return b.String()
}

// objectsOf splits a world's text into its objects' bodies by header.
func objectsOf(world []byte) map[string]string {
	out := map[string]string{}
	var header string
	var body strings.Builder
	flush := func() {
		if header != "" {
			out[header] = body.String()
		}
		body.Reset()
	}
	for _, line := range strings.SplitAfter(string(world), "\n") {
		if line == "" {
			continue
		}
		if isHeader(line) {
			flush()
			header = strings.TrimSuffix(line, "\n")
			continue
		}
		body.WriteString(line)
	}
	flush()
	return out
}

// isHeader reports whether line is an object's header in a world's text:
// "resource namespace/name", where the bodies' lines (indented JSON)
// start with a brace, a bracket or a space.
func isHeader(line string) bool {
	if line == "" || strings.ContainsAny(line[:1], "{}[] \t\"") {
		return false
	}
	res, name, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	return ok && res != "" && strings.Contains(name, "/") && !strings.Contains(name, " ")
}
