// Package printer prints objects as rows of kubectl's server-side Table,
// as kube-apiserver v1.37.2 does, for the objects a replay serves that
// were never recorded in the Table form: the writes of Overlay mode, and
// collections recorded without kubectl's Accept header.
//
// A custom resource is printed by the server's own table convertor over
// its CustomResourceDefinition's additionalPrinterColumns ([NewCustom]).
// Built-in kinds' printers live in k8s.io/kubernetes
// (pkg/printers/internalversion), which cannot be imported (its staging
// modules need replace directives a library's users would not have); they
// are not ported yet, so a built-in kind without a recorded Table form
// prints only the columns internal/table knows.
package printer
