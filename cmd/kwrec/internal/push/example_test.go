package push_test

import (
	"fmt"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/push"
	"github.com/kwrec/kwrec/internal/timepoint"
)

// A recording's window planned as a roots-only push: the namespace and
// the objects nothing recorded owns at the start, then their changes;
// the ReplicaSet and Pods the Deployment owns are left to the target's
// controllers, and what every cluster has to the target itself.
func ExampleNewPlan() {
	rec, err := cut.Read("testdata/shop.kwrec")
	if err != nil {
		panic(err)
	}
	s, err := rec.Script(timepoint.Point{}, timepoint.Point{})
	if err != nil {
		panic(err)
	}
	plan, err := push.NewPlan(s, push.PlanOptions{Mode: push.Roots})
	if err != nil {
		panic(err)
	}
	for _, st := range plan.Start {
		fmt.Println(st.String())
	}
	for _, st := range plan.Changes {
		fmt.Printf("+%v %s\n", st.At, st.String())
	}
	fmt.Println("left out:", plan.Left)
	// Output:
	// create namespaces shop
	// create secrets shop/password
	// create configmaps shop/settings
	// create services shop/web
	// create deployments.apps shop/web
	// +1.012s update deployments.apps shop/web
	// +2.042s update configmaps shop/settings
	// +3.042s delete configmaps shop/settings
	// left out: map[cluster's own:4 owned:4]
}
