package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kwrec/kwrec/internal/explore"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay"
)

// outcome is what one run of kwrec explore found.
type outcome struct {
	failure  string // why the run failed, "" if it got to its end
	world    []byte // the world it ended in, as explore.World
	deleted  []string
	changes  []replay.Change
	requests []replay.RequestCount
	fired    bool // the point's edit fired
}

// run serves the recording with edit (none for the reference run), runs
// the command against it until it has played and the command is idle,
// runs --check, stops the command and returns what the run found.
func (x *explorer) run(ctx context.Context, name string, edit *replay.Edit) outcome {
	opts := replay.Options{Writes: replay.WritesOverlay, Hold: true, Settle: explorePace}
	idle := x.f.idle
	if edit != nil {
		opts.Edits = []replay.Edit{*edit}
		// A client waits out a Retry-After (client-go, and urllib3 under
		// python3-kubernetes) with no request in flight: not idle.
		idle += time.Duration(edit.RetryAfter) * time.Second
	}
	r, err := x.h.Replayer(opts)
	if err != nil {
		return outcome{failure: err.Error()}
	}
	defer r.Close()
	act := &activity{}
	srv := &replay.Server{Replayer: r, Observe: act.observe}
	if err := srv.Start(); err != nil {
		return outcome{failure: err.Error()}
	}
	defer srv.Close()
	kc := filepath.Join(x.logs, explore.FileName(name)+".kubeconfig")
	if err := srv.WriteKubeconfig(kc); err != nil {
		return outcome{failure: err.Error()}
	}
	defer os.Remove(kc)
	log, err := os.Create(filepath.Join(x.logs, explore.FileName(name)+".log"))
	if err != nil {
		return outcome{failure: err.Error()}
	}
	defer log.Close()
	p, err := startProcess(x.command, kc, log)
	if err != nil {
		return outcome{failure: err.Error()}
	}
	why := x.drive(ctx, r, act, p, idle)
	// The command's requests make the points, not --check's.
	requests := append(r.Requests(), r.ObjectRequests()...)
	fired := false
	for _, e := range r.Edits() {
		fired = fired || e.Fired > 0
	}
	if why == "" && x.f.check != "" {
		why = x.runCheck(ctx, kc, log)
	}
	p.stop()
	if why != "" {
		return outcome{failure: why}
	}
	w, err := explore.World(r, nil)
	if err != nil {
		return outcome{failure: fmt.Sprintf("the world: %v", err)}
	}
	return outcome{world: w, deleted: explore.Deleted(r.Writes()), changes: r.Changes(), requests: requests, fired: fired}
}

// drive plays the recording once the command is idle, and waits until it
// has played and the command is idle again; it returns why it could not,
// "" once there.
func (x *explorer) drive(ctx context.Context, r *replay.Replayer, act *activity, p *process, idle time.Duration) string {
	if why := x.waitIdle(ctx, act, p, idle, "at once", "of its start"); why != "" {
		return why
	}
	r.Play()
	bound := time.Duration(len(r.Changes())+1)*explorePace + x.f.settle
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	select {
	case <-r.Done():
	case <-p.exited:
		return p.exit("before the recording had played")
	case <-deadline.C:
		return fmt.Sprintf("did not settle: the recording had not played %v after it began (%s); a command that stops watching, or retries what never gets through, never settles", bound, act)
	case <-ctx.Done():
		return ctx.Err().Error()
	}
	return x.waitIdle(ctx, act, p, idle, "after the recording had played", "after the recording had played")
}

// waitIdle waits until the command has been idle for idle, within
// --settle; it returns why it was not, saying when with exitWhen (the
// command exited) or settleWhen (it did not settle).
func (x *explorer) waitIdle(ctx context.Context, act *activity, p *process, idle time.Duration, exitWhen, settleWhen string) string {
	deadline := time.Now().Add(x.f.settle)
	tick := time.NewTicker(min(idle/10, 50*time.Millisecond))
	defer tick.Stop()
	for {
		if act.idleFor(time.Now()) >= idle {
			return ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("did not settle: the command was not idle for %v within %v %s (%s); a command that keeps making requests never settles", idle, x.f.settle, settleWhen, act)
		}
		select {
		case <-tick.C:
		case <-p.exited:
			return p.exit(exitWhen)
		case <-ctx.Done():
			return ctx.Err().Error()
		}
	}
}

// runCheck runs --check with KUBECONFIG kc, its output to log, and says
// why it failed, "" if it passed.
func (x *explorer) runCheck(ctx context.Context, kc string, log *os.File) string {
	ctx, cancel := context.WithTimeout(ctx, x.f.settle)
	defer cancel()
	fmt.Fprintf(log, "--- kwrec explore: --check %s\n", x.f.check)
	tail := &lastLine{}
	c := exec.CommandContext(ctx, "sh", "-c", x.f.check)
	c.Env = append(os.Environ(), "KUBECONFIG="+kc)
	c.Stdout, c.Stderr = &teeLine{log, tail}, &teeLine{log, tail}
	c.WaitDelay = stopGrace
	if err := c.Run(); err != nil {
		return fmt.Sprintf("--check failed (%v): %s", err, tail.get())
	}
	return ""
}

// activity counts the requests a served run gets, to tell when its client
// is idle: no request in flight but open watches, for how long.
type activity struct {
	mu       sync.Mutex
	requests int       // every request so far
	busy     int       // requests in flight, open watches aside
	watches  int       // watches open
	since    time.Time // when the last request came, or a request or watch ended
}

// observe is [replay.Server.Observe].
func (a *activity) observe(req *http.Request) func() {
	watch := wire.IsWatchURL(req.URL)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	a.since = time.Now()
	if watch {
		a.watches++
	} else {
		a.busy++
	}
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.since = time.Now()
		if watch {
			a.watches--
		} else {
			a.busy--
		}
	}
}

// idleFor is how long the client has been idle at now: 0 before its first
// request, and while a request other than a watch is in flight.
func (a *activity) idleFor(now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.requests == 0 || a.busy > 0 {
		return 0
	}
	return now.Sub(a.since)
}

// String says what the client has done, for a run that did not settle.
func (a *activity) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.requests == 0 {
		return "the command made no request: does it read KUBECONFIG?"
	}
	return fmt.Sprintf("%d requests made, %d in flight, %d watches open", a.requests, a.busy, a.watches)
}

// process is the command of one run, in a process group of its own.
type process struct {
	cmd    *exec.Cmd
	tail   *lastLine
	exited chan struct{} // closed once it has exited; err is then set
	err    error
}

// startProcess starts command with KUBECONFIG kc, its output to log.
func startProcess(command []string, kc string, log *os.File) (*process, error) {
	p := &process{tail: &lastLine{}, exited: make(chan struct{})}
	p.cmd = exec.Command(command[0], command[1:]...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
	p.cmd.Stdout, p.cmd.Stderr = log, &teeLine{log, p.tail}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children stop with it
	p.cmd.WaitDelay = stopGrace                             // a child holding its stderr open cannot hang Wait
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start the command: %w", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// exit says how the command exited, and when: "the command exited at once
// with status 3: the last line of its stderr", "the command exited with
// status 3 before the recording had played: ...".
func (p *process) exit(when string) string {
	status := "status 0"
	var ee *exec.ExitError
	switch {
	case errors.As(p.err, &ee) && ee.ExitCode() >= 0:
		status = fmt.Sprintf("status %d", ee.ExitCode())
	case errors.As(p.err, &ee):
		status = ee.ProcessState.String() // "signal: killed"
	case p.err != nil:
		status = p.err.Error()
	}
	msg := fmt.Sprintf("the command exited with %s %s", status, when)
	if when == "at once" {
		msg = fmt.Sprintf("the command exited at once with %s", status)
	}
	if l := p.tail.get(); l != "" {
		msg += ": " + l
	}
	return msg
}

// stop ends the command and its process group: SIGTERM, then SIGKILL
// after [stopGrace].
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// lastLine keeps the end of what is written to it, for its last line.
type lastLine struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lastLine) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	if len(l.buf) > 4096 {
		l.buf = l.buf[len(l.buf)-4096:]
	}
	return len(b), nil
}

// get returns the last line that is not blank.
func (l *lastLine) get() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(l.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// teeLine writes to a file and to a lastLine.
type teeLine struct {
	f    *os.File
	tail *lastLine
}

func (t *teeLine) Write(b []byte) (int, error) {
	t.tail.Write(b)
	return t.f.Write(b)
}
