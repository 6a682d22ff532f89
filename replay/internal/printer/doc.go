// Package printer prints objects as rows of kubectl's server-side Table,
// as kube-apiserver v1.37.2 does, for the objects a replay serves that
// were never recorded in the Table form: the writes of Overlay mode, and
// collections recorded without kubectl's Accept header.
//
// A custom resource is printed by the server's own table convertor over
// its CustomResourceDefinition's additionalPrinterColumns ([NewCustom]).
// Built-in kinds' printers live in k8s.io/kubernetes
// (pkg/printers/internalversion), which cannot be imported; [Builtin]
// returns a port of those of the kinds a replay commonly serves, with the
// column definitions the server sends, captured from it
// (testdata/columns.json).
package printer
