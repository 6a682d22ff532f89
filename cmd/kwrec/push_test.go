package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/push"
)

func TestPushRateAdmitsTheRecordingsPace(t *testing.T) {
	// 60 updates in the recording's busiest second, 10 in the next.
	plan := &push.Plan{}
	for i := range 70 {
		plan.Changes = append(plan.Changes, push.Step{At: time.Duration(i) * time.Second / 60, Verb: push.Update})
	}
	for _, tc := range []struct {
		name   string
		flags  pushFlags
		qpsSet bool
		qps    float32
		burst  int
		stderr string
	}{
		{name: "at --speed 1 the default 50 a second is raised to twice the busiest second's 60 requests",
			flags: pushFlags{speed: 1, qps: 50, burst: 100}, qps: 120, burst: 120,
			stderr: "kwrec: push: --qps 50 raised to 120, twice the 60 requests of the recording's busiest second at --speed 1\n"},
		{name: "at --speed 0.25 the busiest second holds 15 requests: 50 a second is more than twice that, and kept",
			flags: pushFlags{speed: 0.25, qps: 50, burst: 100}, qps: 50, burst: 100},
		{name: "at --speed 0 nothing is paced: --qps is the limit",
			flags: pushFlags{speed: 0, qps: 50, burst: 100}, qps: 50, burst: 100},
		{name: "a --qps given under the busiest second is kept, with a warning",
			flags: pushFlags{speed: 1, qps: 5, burst: 10}, qpsSet: true, qps: 5, burst: 10,
			stderr: "kwrec: warning: --qps 5 is under the 60 requests of the recording's busiest second at --speed 1: its changes will fall behind\n"},
		{name: "a --qps given over the busiest second is kept as given",
			flags: pushFlags{speed: 1, qps: 70, burst: 10}, qpsSet: true, qps: 70, burst: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			qps, burst := pushRate(&stderr, &tc.flags, tc.qpsSet, plan)
			if qps != tc.qps || burst != tc.burst || stderr.String() != tc.stderr {
				t.Errorf("pushRate = %v, %d, stderr %q; want %v, %d, %q", qps, burst, stderr.String(), tc.qps, tc.burst, tc.stderr)
			}
		})
	}
}
