package diff

// lcs returns the index pairs of a longest common subsequence of a and b,
// in order, by Myers' algorithm in linear space ("An O(ND) Difference
// Algorithm and Its Variations", 1986, section 4b) as GNU diff writes it:
// the common prefix and suffix are matched, a middle point of a shortest
// edit script is found by searching from both ends at once, and the two
// halves are solved the same way. Time is O((n+m)·d) for d versions only
// one side has, which for two recordings of one scenario is small; memory
// is two arrays of n+m+3 ints and the pairs.
func lcs[T comparable](a, b []T) [][2]int {
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	s := &myers[T]{a: a, b: b, out: make([][2]int, 0, min(len(a), len(b)))}
	// Diagonals k = x-y run from -len(b)-1 to len(a)+1.
	s.off = len(b) + 1
	s.fd = make([]int, len(a)+len(b)+3)
	s.bd = make([]int, len(a)+len(b)+3)
	s.compare(0, len(a), 0, len(b))
	return s.out
}

// myers is one run of lcs: the sequences, the forward and backward
// furthest-reaching x of each diagonal (offset by off), and the pairs.
type myers[T comparable] struct {
	a, b   []T
	fd, bd []int
	off    int
	out    [][2]int
}

// compare appends the pairs of an LCS of a[x0:x1] and b[y0:y1].
func (s *myers[T]) compare(x0, x1, y0, y1 int) {
	for x0 < x1 && y0 < y1 && s.a[x0] == s.b[y0] {
		s.out = append(s.out, [2]int{x0, y0})
		x0, y0 = x0+1, y0+1
	}
	suffix := 0
	for x0 < x1 && y0 < y1 && s.a[x1-1] == s.b[y1-1] {
		x1, y1 = x1-1, y1-1
		suffix++
	}
	if x0 < x1 && y0 < y1 {
		xm, ym := s.middle(x0, x1, y0, y1)
		s.compare(x0, xm, y0, ym)
		s.compare(xm, x1, ym, y1)
	}
	for i := range suffix {
		s.out = append(s.out, [2]int{x1 + i, y1 + i})
	}
}

// middle returns a point on a shortest edit script from (x0, y0) to (x1,
// y1), strictly between them when neither the first nor the last elements
// match (compare has matched those), so both halves are smaller.
func (s *myers[T]) middle(x0, x1, y0, y1 int) (xm, ym int) {
	fd, bd, off := s.fd, s.bd, s.off
	dmin, dmax := x0-y1, x1-y0 // the diagonals inside the box
	fmid, bmid := x0-y0, x1-y1 // where each search starts
	fmin, fmax, bmin, bmax := fmid, fmid, bmid, bmid
	odd := (fmid-bmid)&1 != 0
	fd[off+fmid], bd[off+bmid] = x0, x1
	const unreached = int(^uint(0) >> 1)
	for {
		// One more edit forward on each diagonal reached, out of the
		// box never.
		if fmin > dmin {
			fmin--
			fd[off+fmin-1] = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			fd[off+fmax+1] = -1
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			lo, hi := fd[off+d-1], fd[off+d+1]
			x := lo + 1
			if lo < hi {
				x = hi
			}
			y := x - d
			for x < x1 && y < y1 && s.a[x] == s.b[y] {
				x, y = x+1, y+1
			}
			fd[off+d] = x
			if odd && bmin <= d && d <= bmax && bd[off+d] <= x {
				return x, y
			}
		}
		// One more edit backward.
		if bmin > dmin {
			bmin--
			bd[off+bmin-1] = unreached
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			bd[off+bmax+1] = unreached
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			lo, hi := bd[off+d-1], bd[off+d+1]
			x := hi - 1
			if lo < hi {
				x = lo
			}
			y := x - d
			for x > x0 && y > y0 && s.a[x-1] == s.b[y-1] {
				x, y = x-1, y-1
			}
			bd[off+d] = x
			if !odd && fmin <= d && d <= fmax && x <= fd[off+d] {
				return x, y
			}
		}
	}
}
