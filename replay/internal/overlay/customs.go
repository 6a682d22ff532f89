package overlay

import (
	"sync"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// customs are what a world's CustomResourceDefinitions say of their
// resources, read with the server's own code once per version of a
// definition: a change to the definition is read anew.
type customs struct {
	mu   sync.Mutex
	read map[customKey]*write.CustomResource
}

// customKey names one version of a CustomResourceDefinition as the world
// holds it.
type customKey struct {
	name, version string
	rv            int64
}

// Custom returns what the world's CustomResourceDefinition of rp's
// resource says of rp's version (its schema, strategy and selectable
// fields); nil when the world holds no definition of it (a built-in
// resource, or a recording without its CRD) or the version has no
// schema.
func (w *World) Custom(rp apipath.Path) (*write.CustomResource, error) {
	d, ok := w.Definition(rp)
	if !ok {
		return nil, nil
	}
	key := customKey{name: d.Name, version: rp.Version, rv: d.RV}
	w.customs.mu.Lock()
	c, ok := w.customs.read[key]
	w.customs.mu.Unlock()
	if ok {
		return c, nil
	}
	def, err := d.JSON()
	if err != nil {
		return nil, err
	}
	if c, err = write.NewCustomResource(def, rp.Version); err != nil {
		return nil, err
	}
	w.customs.mu.Lock()
	defer w.customs.mu.Unlock()
	if w.customs.read == nil {
		w.customs.read = map[customKey]*write.CustomResource{}
	}
	w.customs.read[key] = c
	return c, nil
}
