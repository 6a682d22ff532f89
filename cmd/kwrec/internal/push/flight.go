package push

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// flight runs the changes of a push, each as soon as it is due and the
// changes it depends on that started before it are done, at most
// workers at once:
//   - a change of an object waits for the changes of that object before
//     it (its resourceVersion, its order);
//   - a change of an object that has owners waits for the changes of
//     its owners before it (a create re-points its ownerReferences at
//     the UIDs the target gave them);
//   - a change of a Namespace or a CustomResourceDefinition waits for
//     every change before it, and every change after it waits for it
//     (what is in the namespace, or of the CRD's resource, needs it).
//
// A change that depends on none of the changes in flight does not wait
// for them: one slow write holds up only what needs it.
type flight struct {
	sem chan struct{} // a slot per change running
	wg  sync.WaitGroup
	mu  sync.Mutex
	// last is, by key (an object's or a recorded UID's), the done
	// channel of the latest change started under it.
	last map[string]chan struct{}
	err  error // the first error a change returned
}

func newFlight(workers int) *flight {
	return &flight{sem: make(chan struct{}, workers), last: map[string]chan struct{}{}}
}

// barrier reports whether every change before st and after it must wait
// for it.
func barrier(st *Step) bool { return tier(st) < 2 }

// keys returns what st waits for (the keys of its object and of its
// owners) and what it is filed under (its object's and its recorded
// UID's).
func keys(st *Step) (waits, files []string) {
	obj := "object " + st.id()
	waits, files = []string{obj}, []string{obj}
	if st.UID != "" {
		files = append(files, "uid "+string(st.UID))
	}
	refs, _, _ := unstructured.NestedSlice(st.Object.Object, "metadata", "ownerReferences")
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok {
			if uid, ok := m["uid"].(string); ok {
				waits = append(waits, "uid "+uid)
			}
		}
	}
	return waits, files
}

// start runs write for st once the changes st depends on are done, and
// returns once it has a slot (at most workers run at once, started in
// order: a change never waits for one that waits for a slot). It
// returns false, starting nothing, once a change has failed.
func (f *flight) start(st *Step, write func() error) bool {
	if barrier(st) {
		f.wg.Wait()
		if f.failed() {
			return false
		}
		f.note(write())
		return true
	}
	f.sem <- struct{}{}
	if f.failed() {
		<-f.sem
		return false
	}
	waits, files := keys(st)
	done := make(chan struct{})
	f.mu.Lock()
	var before []chan struct{}
	for _, k := range waits {
		if c, ok := f.last[k]; ok {
			before = append(before, c)
		}
	}
	for _, k := range files {
		f.last[k] = done
	}
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer func() { close(done); <-f.sem; f.wg.Done() }()
		for _, c := range before {
			<-c
		}
		f.note(write())
	}()
	return true
}

func (f *flight) note(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *flight) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err != nil
}

// wait waits for every change started and returns the first error.
func (f *flight) wait() error {
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
