package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTheREADMEsCLITableHasOneRowPerCommand keeps the README's CLI table
// whole: every command in exactly one row (a row may name several forms
// of its command, or two commands that do the same).
func TestTheREADMEsCLITableHasOneRowPerCommand(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## The CLI\n")
	if !ok {
		t.Fatal("README.md has no section \"## The CLI\"")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := map[string][]int{}
	named := regexp.MustCompile("`kwrec ([a-z]+)")
	for i, line := range strings.Split(strings.TrimSpace(table), "\n")[2:] {
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		seen := map[string]bool{}
		for _, m := range named.FindAllStringSubmatch(first, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				rows[m[1]] = append(rows[m[1]], i+1)
			}
		}
	}
	for _, c := range newRoot(streams{}).Commands() {
		if c.Hidden {
			continue
		}
		if n := len(rows[c.Name()]); n != 1 {
			t.Errorf("kwrec %s is in %d rows %v of the README's CLI table, want 1", c.Name(), n, rows[c.Name()])
		}
		delete(rows, c.Name())
	}
	for name := range rows {
		t.Errorf("the README's CLI table names kwrec %s, which is no command", name)
	}
}
