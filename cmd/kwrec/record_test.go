package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

func TestServerWarningsArePrintedOnceEach(t *testing.T) {
	var b bytes.Buffer
	w := &serverWarnings{w: &b}
	for _, text := range []string{"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice", "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice", "unknown field \"x\""} {
		w.HandleWarningHeader(299, "-", text)
	}
	w.HandleWarningHeader(199, "-", "miscellaneous, not a Kubernetes warning")
	want := "kwrec: warning: the server warns: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n" +
		"kwrec: warning: the server warns: unknown field \"x\"\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

func TestInitialListsTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		rw := &recordWatches{ctx: ctx, listing: make(chan struct{}, initialLists)}
		var dones []func()
		for range initialLists {
			done, ok := rw.startList()
			if !ok {
				t.Fatal("a turn was refused before the recording stopped")
			}
			dones = append(dones, done)
		}
		// waiting starts a list that must wait for a turn, and returns
		// what its startList reports once it has one.
		got := make(chan bool)
		waiting := func(why string) {
			go func() {
				_, ok := rw.startList()
				got <- ok
			}()
			synctest.Wait()
			select {
			case <-got:
				t.Fatal(why)
			default:
			}
		}
		waiting(fmt.Sprintf("list %d started while %d were under way", initialLists+1, initialLists))
		dones[0]()
		dones[0]() // ends one turn, once
		if ok := <-got; !ok {
			t.Fatal("the waiting list was refused once a turn ended")
		}
		waiting("a list started though every turn was taken: a done called twice ended two")
		cancel()
		if ok := <-got; ok {
			t.Error("a list waiting for its turn started after the recording stopped; want ok false")
		}
	})
}
