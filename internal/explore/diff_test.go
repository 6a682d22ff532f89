package explore

import (
	"strings"
	"testing"
)

func TestDiffNamesEveryObjectThatDiffers(t *testing.T) {
	ref := "configmaps ns/a\n{\n  \"data\": {\n    \"k\": \"1\"\n  }\n}\nconfigmaps ns/b\n{\n  \"data\": {}\n}\nconfigmaps ns/gone\n{}\n"
	run := "configmaps ns/a\n{\n  \"data\": {\n    \"k\": \"2\"\n  }\n}\nconfigmaps ns/b\n{\n  \"data\": {}\n}\nconfigmaps ns/new\n{}\n"
	got := Diff([]byte(ref), []byte(run))
	for _, want := range []string{
		"configmaps ns/a (-reference +this run):",
		"configmaps ns/gone: only in the reference run",
		"configmaps ns/new: only in this run",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the diff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ns/b") {
		t.Errorf("the diff names ns/b, which is alike:\n%s", got)
	}
	if d := Diff([]byte(ref), []byte(ref)); d != "" {
		t.Errorf("a world against itself: %q, want none", d)
	}
}
