package write_test

import (
	"fmt"
	"time"

	"github.com/kwrec/kwrec/replay/internal/write"
)

func Example() {
	var e write.Engine
	req := write.Request{
		Verb: write.VerbCreate, Version: "v1", Resource: "configmaps", Kind: "ConfigMap",
		Namespaced: true, Namespace: "default", ContentType: "application/json",
		Body:      []byte(`{"metadata":{"generateName":"cfg-"},"data":{"k":"v"}}`),
		UserAgent: "controller/v1.0",
	}
	st := write.Stamp{RV: "101", Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), UID: "8e2a", Suffix: "x7k2q"}
	res, err := e.Apply(req, nil, st)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Code, res.Event)

	// The same create again is refused as the API server refuses it.
	req.Body = []byte(`{"metadata":{"name":"cfg-x7k2q"}}`)
	_, err = e.Apply(req, res.Object, st)
	fmt.Println(err)
	// Output:
	// 201 ADDED
	// configmaps "cfg-x7k2q" already exists
}
