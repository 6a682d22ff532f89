package printer

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kwrec/kwrec/internal/table"
)

// Builtin returns the printer of built-in resource gr; ok is false for a
// resource no printer was ported for.
func Builtin(gr schema.GroupResource) (p table.Printer, ok bool) {
	return nil, false
}
