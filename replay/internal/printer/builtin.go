package printer

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	kjson "sigs.k8s.io/json"

	"github.com/kwrec/kwrec/internal/table"
)

// columnsJSON holds the column definitions kube-apiserver v1.37.2 sends
// for each resource [NewBuiltin] prints, captured from the live server by
// TestLiveColumns (KWREC_UPDATE_COLUMNS=1 rewrites it): one line per
// resource, its collection path, a tab, and the columnDefinitions array
// as the server spelled it.
//
//go:embed columns.txt
var columnsJSON string

// ErrNoBuiltin means kwrec has no port of the server's printer of a
// resource: it is not built in, or its printer is not ported.
var ErrNoBuiltin = errors.New("no printer of this built-in resource is ported")

// ErrUnprintable means an object lacks a field its kind's printer needs
// (an HPA metric of type Pods without its pods field): the server's
// validation would have refused it.
var ErrUnprintable = errors.New("the object cannot be printed")

// Builtin prints the objects of one built-in resource as kube-apiserver
// v1.37.2's printer for it (k8s.io/kubernetes/pkg/printers/internalversion)
// does, always with the wide columns, as the server's table convertor
// asks for them; ages are as of the time [Builtin.Cells] is given, not
// the wall clock.
type Builtin struct {
	columns []byte
	cells   cellsFunc
}

var _ table.Printer = (*Builtin)(nil)

// cellsFunc returns the cells of an object's row from its JSON, its ages
// as of now.
type cellsFunc func(obj []byte, now time.Time) ([]any, error)

// cellsOf makes the cellsFunc of a printer of T, the kind's type in
// k8s.io/api: the server decodes a request's object case-sensitively. A
// printer that panics (the server's dereference fields its validation
// guarantees, which an object a replay serves may lack) is an error.
func cellsOf[T any](print func(o *T, now time.Time) []any) cellsFunc {
	return func(obj []byte, now time.Time) (cells []any, err error) {
		o := new(T)
		if err := kjson.UnmarshalCaseSensitivePreserveInts(obj, o); err != nil {
			return nil, err
		}
		defer func() {
			if r := recover(); r != nil {
				cells, err = nil, fmt.Errorf("%w: %v", ErrUnprintable, r)
			}
		}()
		return print(o, now), nil
	}
}

// builtins are the ported printers by collection path.
var builtins = map[string]cellsFunc{
	"/api/v1/configmaps":             cellsOf(printConfigMap),
	"/api/v1/endpoints":              cellsOf(printEndpoints),
	"/api/v1/events":                 cellsOf(printEvent),
	"/api/v1/namespaces":             cellsOf(printNamespace),
	"/api/v1/nodes":                  cellsOf(printNode),
	"/api/v1/persistentvolumeclaims": cellsOf(printPersistentVolumeClaim),
	"/api/v1/persistentvolumes":      cellsOf(printPersistentVolume),
	"/api/v1/pods":                   cellsOf(printPod),
	"/api/v1/secrets":                cellsOf(printSecret),
	"/api/v1/serviceaccounts":        cellsOf(printServiceAccount),
	"/api/v1/services":               cellsOf(printService),

	"/apis/apps/v1/daemonsets":   cellsOf(printDaemonSet),
	"/apis/apps/v1/deployments":  cellsOf(printDeployment),
	"/apis/apps/v1/replicasets":  cellsOf(printReplicaSet),
	"/apis/apps/v1/statefulsets": cellsOf(printStatefulSet),

	"/apis/autoscaling/v2/horizontalpodautoscalers": cellsOf(printHorizontalPodAutoscaler),

	"/apis/batch/v1/cronjobs": cellsOf(printCronJob),
	"/apis/batch/v1/jobs":     cellsOf(printJob),

	"/apis/coordination.k8s.io/v1/leases": cellsOf(printLease),

	"/apis/discovery.k8s.io/v1/endpointslices": cellsOf(printEndpointSlice),

	"/apis/events.k8s.io/v1/events": cellsOf(printEventsV1),

	"/apis/networking.k8s.io/v1/ingresses": cellsOf(printIngress),

	"/apis/policy/v1/poddisruptionbudgets": cellsOf(printPodDisruptionBudget),

	"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings": cellsOf(printClusterRoleBinding),
	"/apis/rbac.authorization.k8s.io/v1/clusterroles":        printDefault,
	"/apis/rbac.authorization.k8s.io/v1/rolebindings":        cellsOf(printRoleBinding),
	"/apis/rbac.authorization.k8s.io/v1/roles":               printDefault,
}

// builtinColumns parses columnsJSON.
func builtinColumns() (map[string][]byte, error) {
	cols := map[string][]byte{}
	for line := range strings.Lines(columnsJSON) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		path, def, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok || !json.Valid([]byte(def)) {
			return nil, fmt.Errorf("the embedded columns.txt has a bad line %q; regenerate it with KWREC_UPDATE_COLUMNS=1", line)
		}
		cols[path] = []byte(def)
	}
	return cols, nil
}

// NewBuiltin returns the printer of the built-in resource whose
// collection path (without a namespace) is collection, such as
// /apis/apps/v1/deployments, or an error wrapping [ErrNoBuiltin].
func NewBuiltin(collection string) (*Builtin, error) {
	cells, ok := builtins[collection]
	if !ok {
		return nil, fmt.Errorf("%s: %w", collection, ErrNoBuiltin)
	}
	cols, err := builtinColumns()
	if err != nil {
		return nil, err
	}
	def, ok := cols[collection]
	if !ok {
		return nil, fmt.Errorf("the embedded columns.txt has no %s; regenerate it with KWREC_UPDATE_COLUMNS=1", collection)
	}
	return &Builtin{columns: def, cells: cells}, nil
}

// Columns returns the column definitions the server sends, as it spells
// them.
func (b *Builtin) Columns() []byte { return b.columns }

// Cells returns the cells of obj's row, its ages as of now.
func (b *Builtin) Cells(obj []byte, now time.Time) ([]byte, error) {
	cells, err := b.cells(obj, now)
	if err != nil {
		return nil, err
	}
	return json.Marshal(cells)
}

// since is the server's translateTimestampSince on the replay's clock:
// the age of ts as of now, "<unknown>" for none.
func since(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// sinceMicro is the server's translateMicroTimestampSince on the replay's
// clock.
func sinceMicro(ts metav1.MicroTime, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// BuiltinCollections returns the collection paths [NewBuiltin] prints,
// sorted.
func BuiltinCollections() []string {
	return slices.Sorted(maps.Keys(builtins))
}
