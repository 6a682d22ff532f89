package cassettefile

import (
	"bytes"
	"strings"
	"testing"
)

// A borrowing Scanner lends a long line from a buffer of its own, and
// lets go of a large one at the next read instead of keeping it for the
// rest of the file.
func TestABorrowingScannerDropsALargeLongLinesBuffer(t *testing.T) {
	tests := []struct {
		name     string
		long     int // bytes of the long line
		wantKept bool
	}{
		{"a line of 200 KB keeps its buffer for the next", 200 << 10, true},
		{"a line of 3 MB lets it go", 3 << 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			long := strings.Repeat("x", tt.long)
			text := "short\n" + long + "\nafter\nlast\n"
			sc := NewScanner([]Part{{R: strings.NewReader(text), Name: "c"}}, ScanOptions{Borrow: true})
			defer sc.Close()
			if err := sc.Start(); err != nil {
				t.Fatal(err)
			}
			for i, want := range []string{"short", long, "after", "last"} {
				line, err := sc.ReadLine()
				if err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				if !bytes.Equal(line, []byte(want)) {
					t.Fatalf("line %d is %d bytes, want %d", i+1, len(line), len(want))
				}
			}
			if kept := cap(sc.long) > 0; kept != tt.wantKept {
				t.Errorf("after the long line and two more, the Scanner keeps a buffer of %d bytes; want kept %v", cap(sc.long), tt.wantKept)
			}
		})
	}
}
