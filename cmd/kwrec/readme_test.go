package main

import (
	"io/fs"
	"os"
	"path/filepath"
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

// TestTheREADMEsLayoutHasOneRowPerPackage keeps the README's Layout table
// whole: every folder of the module holding Go files (testdata aside, and
// controlplane/'s nested modules as one row) in exactly one row, and no
// row naming a folder that is gone.
func TestTheREADMEsLayoutHasOneRowPerPackage(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Layout\n")
	if !ok {
		t.Fatal("README.md has no section \"## Layout\"")
	}
	_, table, _ = strings.Cut(table, "| path | what |\n| --- | --- |\n")
	table, _, _ = strings.Cut(table, "\n\n")
	rows := map[string]int{}
	for _, line := range strings.Split(table, "\n") {
		path, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		rows[strings.TrimSuffix(path, "/")]++
	}
	root := filepath.Join("..", "..")
	packages := map[string]bool{"controlplane": true}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." || rel == "controlplane" || rel == "bin"):
			return fs.SkipDir
		case !d.IsDir() && strings.HasSuffix(p, ".go"):
			packages[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range packages {
		if rows[p] != 1 {
			t.Errorf("%s/ is in %d rows of the README's Layout table, want 1", p, rows[p])
		}
	}
	for p := range rows {
		if !packages[p] && p != "deploy" {
			t.Errorf("the README's Layout table names %s/, which holds no Go package", p)
		}
	}
}
