package cassettefile

import (
	"testing"
	"time"
)

var durationSeeds = []string{
	"0s", "0", "", "1ns", "1.5ns", "999ns", "1µs", "1.234µs", "1.2345µs", "1μs", "1us", "1.5ms", "1.234567ms", "1.2345678ms",
	"1s", "1.234567891s", "1.2345678912s", "1m0s", "1h2m3.5s", "2562047h47m16.854775807s", "2562047h47m16.854775808s",
	"9223372036854775807ns", "9223372036854775808ns", "-1s", "+1s", ".5s", "1.s", "1..5s", "1sm", "1x", "1.5m", "1.5h",
	"1000000000000000000000h", "1s1s1s", "00000000000000000001s", "1.000000000s", "3m60s",
}

// TestDurationsAreParsedAsTimeParsesThem: every form a Writer writes, and
// others, as time.ParseDuration parses them or refuses them.
func TestDurationsAreParsedAsTimeParsesThem(t *testing.T) {
	for _, s := range durationSeeds {
		sameDuration(t, s)
	}
	for d := time.Duration(1); d > 0 && d < 1<<62; d = d*7 + d/3 + 1 {
		sameDuration(t, d.String())
		if _, ok := plainDuration([]byte(d.String())); !ok {
			t.Errorf("plainDuration(%q) leaves what a Writer writes to time.ParseDuration", d)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range durationSeeds {
		f.Add(s)
	}
	f.Fuzz(sameDuration)
}

func sameDuration(t *testing.T, s string) {
	t.Helper()
	want, wantErr := time.ParseDuration(s)
	got, err := parseDuration([]byte(s))
	if got != want || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Errorf("parseDuration(%q) = %v, %v; time.ParseDuration says %v, %v", s, got, err, want, wantErr)
	}
}

func TestParsingADurationAllocatesNothing(t *testing.T) {
	b := []byte("1h2m3.456789s")
	if n := testing.AllocsPerRun(100, func() { parseDuration(b) }); n != 0 {
		t.Errorf("parseDuration allocates %v times", n)
	}
}
