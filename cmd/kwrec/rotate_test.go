package main

import "testing"

func TestParseSizeTakesDecimalAndBinaryUnits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true},
		{"1048576", 1 << 20, true},
		{"100MB", 100e6, true},
		{"100M", 100e6, true},
		{"1GiB", 1 << 30, true},
		{"500Mi", 500 << 20, true},
		{"1.5kB", 1500, true},
		{"2KB", 2000, true},
		{"lots", 0, false},
		{"0", 0, false},
		{"-1MB", 0, false},
		{"1MiBB", 0, false},
		{"1PB", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
