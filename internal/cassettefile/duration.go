package cassettefile

import "time"

// parseDuration parses b as time.ParseDuration does. It reads the forms a
// Writer writes (time.Duration's String: "0s", "1.5ms", "1h2m3.5s")
// itself, without the string time.ParseDuration needs, which would be an
// allocation per frame line; anything else (a sign, a fraction of a
// nanosecond, a value near the overflow) goes to time.ParseDuration.
func parseDuration(b []byte) (time.Duration, error) {
	if d, ok := plainDuration(b); ok {
		return d, nil
	}
	return time.ParseDuration(string(b))
}

// plainDuration parses b, a sequence of a number and its unit, where each
// number is digits with, if the unit takes it exactly, a fraction: the
// result is then what time.ParseDuration computes, with no rounding (its
// fraction is float64(f)*(float64(unit)/scale), exact when scale divides
// unit). It reports false for anything else and before any overflow.
func plainDuration(b []byte) (time.Duration, bool) {
	const maxDuration = 1<<63 - 1
	if len(b) == 0 {
		return 0, false
	}
	var d uint64
	for len(b) > 0 {
		v, i := leadingDigits(b, 18)
		if i == 0 {
			return 0, false
		}
		b = b[i:]
		f, scale := uint64(0), uint64(1)
		if len(b) > 0 && b[0] == '.' {
			f, i = leadingDigits(b[1:], 9)
			if i == 0 {
				return 0, false
			}
			for range i {
				scale *= 10
			}
			b = b[1+i:]
		}
		unit, n := durationUnit(b)
		if n == 0 || unit%scale != 0 || v > maxDuration/unit {
			return 0, false
		}
		b = b[n:]
		d += v*unit + f*(unit/scale) // below 2^63 + 2^42: no wrap
		if d > maxDuration {
			return 0, false
		}
	}
	return time.Duration(d), true
}

// leadingDigits returns the value of b's leading decimal digits, at most
// most of them, and how many.
func leadingDigits(b []byte, most int) (v uint64, n int) {
	for ; n < len(b) && n < most && '0' <= b[n] && b[n] <= '9'; n++ {
		v = v*10 + uint64(b[n]-'0')
	}
	return v, n
}

// durationUnit returns the unit at the start of b, in nanoseconds, and its
// length; 0, 0 if there is none. As time.ParseDuration does, the unit is
// every byte up to a digit or a '.'.
func durationUnit(b []byte) (uint64, int) {
	n := 0
	for n < len(b) && b[n] != '.' && (b[n] < '0' || b[n] > '9') {
		n++
	}
	switch string(b[:n]) {
	case "ns":
		return uint64(time.Nanosecond), n
	case "us", "µs", "μs": // U+00B5 (Duration.String's) and U+03BC
		return uint64(time.Microsecond), n
	case "ms":
		return uint64(time.Millisecond), n
	case "s":
		return uint64(time.Second), n
	case "m":
		return uint64(time.Minute), n
	case "h":
		return uint64(time.Hour), n
	}
	return 0, 0
}
