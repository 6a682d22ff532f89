package cassettefile

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// podList returns a JSON list of n Pods alike but for their names, uids
// and resourceVersions, and where each item lies in it.
func podList(n int) ([]byte, [][2]int) {
	item := strings.TrimSuffix(pod, "\n")
	list := []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[`)
	var items [][2]int
	for i := range n {
		if i > 0 {
			list = append(list, ',')
		}
		it := strings.NewReplacer("x2k4q", fmt.Sprintf("p%05d", i), "1234567890ab", fmt.Sprintf("%012x", i*7919), "123456", fmt.Sprint(100000+i)).Replace(item)
		items = append(items, [2]int{len(list), len(list) + len(it)})
		list = append(list, it...)
	}
	return append(list, "]}\n"...), items
}

func TestAPackedFrameGivesBackItsBytes(t *testing.T) {
	list, _ := podList(200) // 15 chunks
	tests := []struct {
		name string
		data []byte
	}{
		{"an empty frame", nil},
		{"a frame shorter than a dictionary can be", []byte("0123456789")},
		{"a frame of one chunk", list[:packChunk]},
		{"a frame of one chunk and a byte", list[:packChunk+1]},
		{"a list of many chunks", list},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Pack(tt.data)
			if p.Len() != len(tt.data) {
				t.Fatalf("Len() = %d, want %d", p.Len(), len(tt.data))
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 50 {
				if len(tt.data) == 0 {
					break
				}
				lo := r.IntN(len(tt.data))
				hi := lo + 1 + r.IntN(len(tt.data)-lo)
				got, origin, err := p.Range([]byte("keep"), lo, hi)
				if err != nil {
					t.Fatalf("Range(%d, %d): %v", lo, hi, err)
				}
				if !bytes.HasPrefix(got, []byte("keep")) {
					t.Fatalf("Range(%d, %d) did not append to dst", lo, hi)
				}
				got = got[4:]
				if origin > lo || origin+len(got) < hi || !bytes.Equal(got, tt.data[origin:origin+len(got)]) {
					t.Fatalf("Range(%d, %d) = bytes %d to %d, not the frame's", lo, hi, origin, origin+len(got))
				}
			}
			if _, _, err := p.Range(nil, 0, len(tt.data)+1); err == nil {
				t.Errorf("Range past the frame's end: no error")
			}
		})
	}
}

// A list of objects alike is held in a fraction of its bytes: what lets a
// reader keep the lists deltas name.
func TestAPackedListIsHeldInAFifthOfItsBytes(t *testing.T) {
	list, _ := podList(2000)
	p := Pack(list)
	if p.Held()*5 > len(list) {
		t.Errorf("a %d-byte list is held in %d bytes, want at most a fifth", len(list), p.Held())
	}
}

// A delta against an item applies to the packed list as to the list, and
// the encoder writes the same delta from the item's chunks as from the
// whole list.
func TestADeltaAgainstAPackedListIsTheDeltaAgainstTheList(t *testing.T) {
	list, items := podList(300)
	p := Pack(list)
	var e DeltaEncoder
	var scratch, chunks []byte
	for k, it := range items {
		if k%7 != 0 {
			continue
		}
		item := list[it[0]:it[1]]
		target := []byte(`{"type":"MODIFIED","object":` + strings.Replace(string(item), "Running", "Succeeded", 1) + "}\n")
		want := e.AppendRange(nil, list, it[0], it[1], target)
		var origin int
		var err error
		chunks, origin, err = p.Range(chunks[:0], it[0], it[1])
		if err != nil {
			t.Fatal(err)
		}
		if got := e.AppendRangeAt(nil, chunks, origin, it[0], it[1], target); !bytes.Equal(got, want) {
			t.Fatalf("item %d: AppendRangeAt on its chunks wrote %q, AppendRange on the list %q", k, got, want)
		}
		var got []byte
		got, scratch, err = p.ApplyDelta([]byte("x"), want, scratch)
		if err != nil || !bytes.Equal(got, append([]byte("x"), target...)) {
			t.Fatalf("item %d: ApplyDelta = %q, %v; want %q after x", k, got, err, target)
		}
	}
}

// A bad delta against a packed frame is the error ApplyDelta gives
// against the frame.
func TestABadDeltaAgainstAPackedFrameIsApplyDeltasError(t *testing.T) {
	list, _ := podList(300)
	p := Pack(list)
	tests := []struct{ name, delta string }{
		{"an op cut in its varint", "\x80"},
		{"a copy with no offset", "\x05"},
		{"a copy past the frame's end", fmt.Sprintf("\x11%s", varint(int64(len(list)-2)))},
		{"a copy before the frame's start", "\x03\x01\x03\x7f"},
		{"an insert past the end", "\x0aab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, want := ApplyDelta(nil, list, []byte(tt.delta))
			_, _, err := p.ApplyDelta(nil, []byte(tt.delta), nil)
			if want == nil || !errors.Is(err, ErrBadDelta) || err.Error() != want.Error() {
				t.Errorf("ApplyDelta against the packed frame: %v, want %v", err, want)
			}
		})
	}
}

func varint(v int64) string {
	var b []byte
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return string(append(b, byte(u)))
}

func FuzzPackedDelta(f *testing.F) {
	list, _ := podList(120)
	p := Pack(list)
	f.Add([]byte("\x03\x01\x03\x7f"))
	f.Add([]byte("\x11\x00"))
	f.Fuzz(func(t *testing.T, delta []byte) {
		want, werr := ApplyDelta(nil, list, delta)
		got, _, err := p.ApplyDelta(nil, delta, nil)
		if (werr == nil) != (err == nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Fatalf("packed: %q, %v; whole: %q, %v", got, err, want, werr)
		}
	})
}

// A corrupt delta that claims a long copy costs no more memory than its
// bytes: its frame is not allocated before the copy is found outside the
// base.
func TestACorruptDeltaClaimingALongCopyAllocatesLittle(t *testing.T) {
	base := []byte("0123456789")
	list, _ := podList(50)
	p := Pack(list)
	delta := []byte("\x81\x80\x80\xc0\x01\x00") // a copy of 200 MiB from offset 0
	for _, tt := range []struct {
		name  string
		apply func() error
	}{
		{"against a frame", func() error { _, err := ApplyDelta(nil, base, delta); return err }},
		{"against a packed frame", func() error { _, _, err := p.ApplyDelta(nil, delta, nil); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err = tt.apply()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrBadDelta) || !strings.Contains(err.Error(), "is outside the base's") {
				t.Fatalf("err = %v, want ErrBadDelta: outside the base", err)
			}
			// (A margin for what other tests may allocate meanwhile.)
			if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
				t.Errorf("allocated %d bytes for a %d-byte delta", n, len(delta))
			}
		})
	}
}

// The versions of a watch's objects, packed against a dictionary of one
// of them as a reader keeps them, are held in a fraction of their bytes
// and give their bytes back; without a dictionary (a first frame too
// short for one) they are packed in plain S2.
func TestFramesPackedAgainstADictionaryOfOneOfThemGiveBackTheirBytes(t *testing.T) {
	list, items := podList(40)
	tests := []struct {
		name     string
		dict     *PackDict
		fraction int // held at most 1/fraction of the bytes; 0: no bound
	}{
		{"against the first frame's dictionary", NewPackDict(list[items[0][0]:items[0][1]]), 3},
		{"with no dictionary", NewPackDict([]byte("short")), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held, raw := 0, 0
			for _, it := range items[1:] {
				frame := list[it[0]:it[1]]
				p := PackWith(frame, tt.dict)
				got, origin, err := p.Range(nil, 0, len(frame))
				if err != nil || origin != 0 || !bytes.Equal(got, frame) {
					t.Fatalf("Range of the whole frame = %d bytes from %d, %v; want the frame's %d", len(got), origin, err, len(frame))
				}
				held += p.Held()
				raw += len(frame)
			}
			if tt.fraction > 0 && held*tt.fraction > raw {
				t.Errorf("%d bytes of frames held in %d, want at most 1/%d", raw, held, tt.fraction)
			}
		})
	}
}
