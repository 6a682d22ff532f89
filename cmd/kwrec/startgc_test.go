package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// kwrec serve relaxes the collector while a small cassette opens, and
// leaves it alone for a large one or when GOGC says otherwise.
func TestStartGC(t *testing.T) {
	tests := []struct {
		name        string
		gogc        string // "" unset
		size        int64  // of the cassette
		wantStarted int
	}{
		{"without GOGC a small cassette's start collects at startGCPercent", "", 4 << 20, startGCPercent},
		{"the largest cassette that does", "", startGCMaxBytes, startGCPercent},
		{"a larger cassette's start collects as usual", "", startGCMaxBytes + 1, 150},
		{"GOGC set by the user is left alone", "150", 4 << 20, 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.gogc != "" {
				t.Setenv("GOGC", tt.gogc)
			} else if v, ok := os.LookupEnv("GOGC"); ok {
				t.Setenv("GOGC", v) // restored after the test
				os.Unsetenv("GOGC")
			}
			before := 150 // the percent before the start
			defer debug.SetGCPercent(debug.SetGCPercent(before))
			end := startGC(tt.size)
			if got := debug.SetGCPercent(-1); got != tt.wantStarted {
				t.Errorf("percent while starting = %d, want %d", got, tt.wantStarted)
			}
			debug.SetGCPercent(tt.wantStarted)
			end()
			if got := debug.SetGCPercent(before); got != before {
				t.Errorf("percent after end = %d, want %d", got, before)
			}
			debug.SetGCPercent(77)
			end() // a second end does nothing
			if got := debug.SetGCPercent(before); got != 77 {
				t.Errorf("percent after a second end = %d, want 77 (left alone)", got)
			}
		})
	}
}
