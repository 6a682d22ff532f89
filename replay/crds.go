package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kwrec/kwrec/replay/internal/overlay"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// CRDs are CustomResourceDefinitions given to a replay from manifests,
// as envtest takes them (a directory such as config/crd/bases): each is
// created in the replay's world when the replay starts, before any
// client's request, as envtest installs them in its API server, so that
// its custom resources are pruned, defaulted and validated by their
// schema and served in discovery and OpenAPI. A definition the recording
// also holds is replaced by the manifest's. Load them once with
// [LoadCRDs] and give them to any number of replays through
// [Options.CRDs]; they take [WritesOverlay].
type CRDs struct {
	defs []crdManifest
}

// crdManifest is one definition read, and where it was read from.
type crdManifest struct {
	name, source string
	json         []byte
}

func (c *CRDs) jsons() [][]byte {
	out := make([][]byte, len(c.defs))
	for i, d := range c.defs {
		out[i] = d.json
	}
	return out
}

// Names returns the names of the definitions, in the order they were
// read.
func (c *CRDs) Names() []string {
	out := make([]string, len(c.defs))
	for i, d := range c.defs {
		out[i] = d.name
	}
	return out
}

// ErrBadCRD means a manifest given to [LoadCRDs] is not a valid
// CustomResourceDefinition; the error names the file and the document.
var ErrBadCRD = errors.New("not a valid CustomResourceDefinition")

// LoadCRDs reads the CustomResourceDefinitions of paths: files of YAML
// (several documents each, separated by ---) or JSON, and directories,
// whose .yaml, .yml and .json files are read in name order (not their
// subdirectories), as envtest reads CRDDirectoryPaths. Each definition is
// checked as kube-apiserver v1.37.2 checks a create (the apiextensions
// strategy's validation: names, a structural schema, CEL rules,
// subresources, printer columns); the first that fails is the error,
// wrapping [ErrBadCRD], naming its file and document, with the server's
// words, and nothing is loaded. A path that does not exist, or holds no
// definition at all, is an error too.
func LoadCRDs(paths ...string) (*CRDs, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("CRDs: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("CRDs: %w", err)
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	c := &CRDs{}
	var engine write.Engine
	for _, f := range files {
		defs, err := readCRDFile(&engine, f)
		if err != nil {
			return nil, err
		}
		c.defs = append(c.defs, defs...)
	}
	if len(c.defs) == 0 {
		return nil, fmt.Errorf("CRDs: no CustomResourceDefinition in %s", strings.Join(paths, ", "))
	}
	for i, d := range c.defs {
		if j := slices.IndexFunc(c.defs[:i], func(o crdManifest) bool { return o.name == d.name }); j >= 0 {
			return nil, fmt.Errorf("%s: %w: %s is defined twice, here and in %s", d.source, ErrBadCRD, d.name, c.defs[j].source)
		}
	}
	return c, nil
}

// readCRDFile reads and checks the definitions of one file.
func readCRDFile(engine *write.Engine, file string) ([]crdManifest, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("CRDs: %w", err)
	}
	var out []crdManifest
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		where := fmt.Sprintf("%s: document %d", file, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", where, ErrBadCRD, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || isCommentOnly(doc) {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", where, ErrBadCRD, err)
		}
		name, err := checkCRD(engine, js)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", where, ErrBadCRD, err)
		}
		out = append(out, crdManifest{name: name, source: where, json: js})
	}
}

// isCommentOnly reports whether a YAML document holds only comments.
func isCommentOnly(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// checkCRD checks one definition's JSON as the server checks a create of
// it (a dry run of the write engine), and returns its name.
func checkCRD(engine *write.Engine, js []byte) (string, error) {
	var head struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
	}
	if err := yaml.Unmarshal(js, &head); err != nil {
		return "", err
	}
	if head.Kind != "CustomResourceDefinition" || head.APIVersion != "apiextensions.k8s.io/v1" {
		return "", fmt.Errorf("a %s of %q, want kind CustomResourceDefinition of apiextensions.k8s.io/v1", orNone(head.Kind), head.APIVersion)
	}
	p := overlay.CRDPath
	req := write.Request{Verb: write.VerbCreate, Group: p.Group, Version: p.Version, Resource: p.Resource, Kind: "CustomResourceDefinition",
		StatusSubresource: true, ContentType: "application/json", Body: js, Query: url.Values{"fieldValidation": {"Strict"}}, DryRun: true}
	if _, err := engine.Apply(req, nil, write.Stamp{Now: time.Unix(0, 0), UID: "check"}); err != nil {
		var st *apierrors.StatusError
		if errors.As(err, &st) {
			return head.Metadata.Name, errors.New(st.ErrStatus.Message)
		}
		return head.Metadata.Name, err
	}
	return head.Metadata.Name, nil
}

func orNone(kind string) string {
	if kind == "" {
		return "document with no kind"
	}
	return kind
}
