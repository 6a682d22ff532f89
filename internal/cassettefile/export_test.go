package cassettefile

// SeekStates counts file k's seek points by whether their claims are
// yet to be checked, were checked and held (good), or did not (bad).
func (l *Lines) SeekStates(k int) (unknown, good, bad int) {
	fl := l.files[k]
	for i := range fl.seeks {
		switch fl.seeks[i].state.Load() {
		case seekUnknown:
			unknown++
		case seekGood:
			good++
		case seekBad:
			bad++
		}
	}
	return unknown, good, bad
}
