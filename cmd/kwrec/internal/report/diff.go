package report

// lineOp is one step of a line diff of a base text into a new one: keep
// (copy) n base lines, skip (delete) n base lines, or insert lines.
type lineOp struct {
	keep, skip int
	insert     []string
}

// maxDiffCost bounds the edit distance diffLines searches; beyond it the
// new text is stored whole (a delete of the base and an insert), which is
// correct and, for texts that different, hardly larger.
const maxDiffCost = 4000

// diffLines returns the ops that turn a into b: Myers' O(ND) shortest edit
// script, after trimming the common prefix and suffix (most versions of an
// object differ in a few lines).
func diffLines(a, b []string) []lineOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops opList
	ops.keep(pre)
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if script, ok := myers(ma, mb); ok {
		for _, s := range script {
			switch s.kind {
			case '=':
				ops.keep(1)
			case '-':
				ops.skip(1)
			default:
				ops.insert(mb[s.j])
			}
		}
	} else {
		ops.skip(len(ma))
		for _, l := range mb {
			ops.insert(l)
		}
	}
	ops.keep(suf)
	return ops.ops
}

// opList appends ops, merging runs of the same kind.
type opList struct{ ops []lineOp }

func (l *opList) last() *lineOp {
	if len(l.ops) == 0 {
		return nil
	}
	return &l.ops[len(l.ops)-1]
}

func (l *opList) keep(n int) { l.count(n, func(o *lineOp) *int { return &o.keep }) }

func (l *opList) skip(n int) { l.count(n, func(o *lineOp) *int { return &o.skip }) }

// count adds n lines to the count field picks (keep or skip): to the last
// op's when it is of that kind, else in a new op.
func (l *opList) count(n int, field func(*lineOp) *int) {
	if n == 0 {
		return
	}
	if p := l.last(); p != nil && *field(p) > 0 {
		*field(p) += n
		return
	}
	var op lineOp
	*field(&op) = n
	l.ops = append(l.ops, op)
}

func (l *opList) insert(s string) {
	if p := l.last(); p != nil && p.insert != nil {
		p.insert = append(p.insert, s)
		return
	}
	l.ops = append(l.ops, lineOp{insert: []string{s}})
}

// step is one line of an edit script: '=' keeps a[i], '-' deletes a[i],
// '+' inserts b[j].
type step struct {
	kind byte
	i, j int
}

// myers returns the shortest edit script from a to b, or false when it
// costs more than maxDiffCost.
func myers(a, b []string) ([]step, bool) {
	n, m := len(a), len(b)
	maxD := min(n+m, maxDiffCost)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	// trace[d] is the frontier before step d on the diagonals step d
	// reads, -d-1 to d+1 (what backtrack needs): O(D²) ints in all, not
	// O(D·(n+m)), which a copy of the whole frontier per step took (a
	// report of 150,000 versions allocated 23 GB so).
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, d, n, m), true
			}
		}
	}
	return nil, false
}

// backtrack walks the saved frontiers back from (n, m) to (0, 0).
func backtrack(trace [][]int, d, n, m int) []step {
	var rev []step
	x, y := n, m
	for ; d > 0; d-- {
		// The frontier on diagonal k before step d.
		v := func(k int) int { return trace[d][k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && v(k-1) < v(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v(pk)
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, step{'=', x, y})
		}
		if x == px {
			y--
			rev = append(rev, step{'+', x, y})
		} else {
			x--
			rev = append(rev, step{'-', x, y})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, step{'=', x, y})
	}
	out := make([]step, len(rev))
	for i, s := range rev {
		out[len(rev)-1-i] = s
	}
	return out
}

// applyOps rebuilds the new text from base and ops; tests use it to check
// diffLines, the page does the same in JavaScript.
func applyOps(base []string, ops []lineOp) []string {
	var out []string
	i := 0
	for _, o := range ops {
		switch {
		case o.keep > 0:
			out = append(out, base[i:i+o.keep]...)
			i += o.keep
		case o.skip > 0:
			i += o.skip
		default:
			out = append(out, o.insert...)
		}
	}
	return out
}
