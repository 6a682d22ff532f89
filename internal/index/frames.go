package index

// frameChunk is how many frames a chunk of a [FrameList] holds.
const frameChunk = 4096

// FrameList is an interaction's frames, in order, in chunks of 4,096: it
// grows a chunk at a time and never copies the chunks it has filled, so
// an index of a million-frame watch is never held twice while Open builds
// it (as growing and then trimming one slice did). Its zero value is an
// empty list.
type FrameList struct {
	c [][]Frame
	n int
}

// Len returns the number of frames.
func (l *FrameList) Len() int { return l.n }

// At returns frame i (0-based).
func (l *FrameList) At(i int) Frame { return l.c[i/frameChunk][i%frameChunk] }

// Append adds f after the last frame. The first chunk grows by doubling,
// so that an interaction of a few frames stays small; every later one is
// made whole.
func (l *FrameList) Append(f Frame) {
	if l.n%frameChunk == 0 {
		var c []Frame
		if l.n > 0 {
			c = make([]Frame, 0, frameChunk)
		}
		l.c = append(l.c, c)
	}
	k := len(l.c) - 1
	if c := l.c[k]; len(c) == cap(c) {
		grown := make([]Frame, len(c), min(max(2*cap(c), 4), frameChunk))
		copy(grown, c)
		l.c[k] = grown
	}
	l.c[k] = append(l.c[k], f)
	l.n++
}

// Slice returns the frames as one new slice.
func (l *FrameList) Slice() []Frame {
	out := make([]Frame, 0, l.n)
	for _, c := range l.c {
		out = append(out, c...)
	}
	return out
}
