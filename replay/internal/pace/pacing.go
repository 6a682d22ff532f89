package pace

import "time"

// Pacing turns recorded gaps into clock waits.
type Pacing struct {
	Speed float64       // 0: no waits
	Cap   time.Duration // 0: no cap
}

// Wait is how long to wait for a recorded gap d.
func (p Pacing) Wait(d time.Duration) time.Duration {
	if p.Speed <= 0 || d <= 0 {
		return 0
	}
	w := time.Duration(float64(d) / p.Speed)
	if p.Cap > 0 && w > p.Cap {
		w = p.Cap
	}
	return w
}

// Idle is how long an idle stream lasts for a client timeout d: scaled by
// the speed but never capped; at speed 0 (no waits) the full d, so a client
// that re-watches at once does not spin.
func (p Pacing) Idle(d time.Duration) time.Duration {
	if p.Speed <= 0 {
		return d
	}
	return time.Duration(float64(d) / p.Speed)
}

// Paced reports whether p waits at all.
func (p Pacing) Paced() bool { return p.Speed > 0 }
