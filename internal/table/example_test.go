package table_test

import (
	"fmt"

	"github.com/kwrec/kwrec/internal/table"
)

// A Table list recorded once answers a later view of the collection: here
// the state at resourceVersion 12, where only b is left, and b as the
// first event of a watch from resourceVersion 7.
func Example() {
	var x table.Index
	recorded := `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},` +
		`"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[` +
		`{"cells":["a"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}},` +
		`{"cells":["b"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"8"}}}]}`
	if err := x.AddList([]byte(recorded)); err != nil {
		fmt.Println(err)
		return
	}
	gv, ok := table.Wants("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
	fmt.Println(gv, ok)
	b := table.Version{Key: "ns/b", RV: "8"}
	list, _ := x.List(gv, "12", "", nil, []table.Version{b})
	fmt.Print(string(list))
	event, _ := x.WatchEvent(gv, "ADDED", b, true)
	fmt.Print(string(event))
	// Output:
	// meta.k8s.io/v1 true
	// {"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"12"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["b"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"8"}}}]}
	// {"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"8"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["b"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"8"}}}]}}
}
