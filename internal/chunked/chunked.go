// Package chunked is a growable array that never copies what it holds: a
// [List] grows a chunk of 4,096 values at a time, so an index of a
// million-line recording is never held twice while it is built, as
// growing one slice by append does (the old and the new array both live
// while it copies, and append rounds its capacity up past what is used).
package chunked

// Len is how many values a chunk of a [List] holds.
const Len = 4096

// List is a growable array in chunks of [Len] values. The first chunk
// grows by doubling, so a short list stays small, up to Len exactly
// (append would round past it, a quarter more in every chunk), and every
// later chunk is made whole. Its zero value is an empty list; it is not
// safe for concurrent use.
type List[T any] struct {
	c [][]T
	n int
}

// Len returns how many values l holds.
func (l *List[T]) Len() int { return l.n }

// At returns a pointer to value i, valid while l holds it.
func (l *List[T]) At(i int) *T { return &l.c[i/Len][i%Len] }

// Add appends v.
func (l *List[T]) Add(v T) {
	if l.n%Len == 0 {
		var c []T
		if l.n > 0 {
			c = make([]T, 0, Len)
		}
		l.c = append(l.c, c)
	}
	k := len(l.c) - 1
	if c := l.c[k]; len(c) == cap(c) {
		grown := make([]T, len(c), min(max(2*cap(c), 4), Len))
		copy(grown, c)
		l.c[k] = grown
	}
	l.c[k] = append(l.c[k], v)
	l.n++
}

// Truncate keeps the first n values, dropping the chunks past them.
func (l *List[T]) Truncate(n int) {
	keep := (n + Len - 1) / Len
	clear(l.c[keep:])
	l.c = l.c[:keep]
	if keep > 0 {
		l.c[keep-1] = l.c[keep-1][:n-(keep-1)*Len]
	}
	l.n = n
}
