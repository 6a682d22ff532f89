// Package printer prints objects as rows of kubectl's server-side Table,
// as kube-apiserver v1.37.2 does, for the objects a replay serves that
// were never recorded in the Table form: the writes of Overlay mode, and
// collections recorded without kubectl's Accept header.
//
// A custom resource is printed by the server's own table convertor over
// its CustomResourceDefinition's additionalPrinterColumns ([NewCustom]).
//
// A built-in kind is printed by a port of the server's printer
// ([NewBuiltin]). Those live in k8s.io/kubernetes
// (pkg/printers/internalversion/printers.go), which cannot be imported
// (its staging modules need replace directives a library's users would
// not have); each function here names the one it ports, and works on the
// kind's k8s.io/api type where the server prints its internal type. The
// column definitions are not typed by hand: columns.txt holds the ones
// the live server sends, captured by TestLiveColumns
// (KWREC_UPDATE_COLUMNS=1 rewrites it, and otherwise the test checks it
// against the server). Roles and ClusterRoles are printed by the server's
// default convertor (k8s.io/apiserver's, imported): Name and Created At.
//
// The server prints the time-dependent cells (ages, a running Job's
// duration, a Pod's last restart) on the wall clock; these printers take
// the time to print them as of, a replay's clock.
package printer
