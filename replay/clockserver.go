package replay

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// ClockPath is where a [Server] serves its replay's world clock
// ([Options.WorldClock]), behind the same token as the API: no Kubernetes
// API serves a path under /kwrec. GET answers the clock's state as JSON:
//
//	{"at":"1m30s","time":"2026-12-01T07:01:30Z","length":"10m0s","speed":1,"paused":false}
//
// POST changes it, with a JSON body of one action, and answers the new
// state (with "dropped": the writes a seek back dropped):
//
//	{"action":"play"}  {"action":"pause"}
//	{"action":"seek","at":"90s"}   (as Options.At: a duration, an RFC 3339 time, rv=N, end)
//	{"action":"speed","speed":2}
//
// A refused action is answered 400 with {"error":"..."}; a replay on the
// consumption clock answers 409.
const ClockPath = "/kwrec/v1/clock"

// clockState is the JSON of a world clock's state.
type clockState struct {
	At      string   `json:"at"`
	Time    string   `json:"time"`
	Length  string   `json:"length"`
	Speed   float64  `json:"speed"`
	Paused  bool     `json:"paused"`
	Dropped []string `json:"dropped,omitempty"`
}

// clockAction is the JSON of a change to a world clock.
type clockAction struct {
	Action string   `json:"action"`
	At     string   `json:"at,omitempty"`
	Speed  *float64 `json:"speed,omitempty"`
}

// serveClock answers a request for ClockPath.
func serveClock(w http.ResponseWriter, req *http.Request, r *Replayer, logf func(string, ...any)) {
	wc := r.WorldClock()
	switch {
	case wc == nil:
		clockError(w, http.StatusConflict, errors.New("this replay runs on the consumption clock: serve it with --clock world to control its world"))
		return
	case req.Method == http.MethodGet:
	case req.Method == http.MethodPost:
		dropped, err := applyClock(wc, req.Body)
		if err != nil {
			clockError(w, http.StatusBadRequest, err)
			return
		}
		for _, d := range dropped {
			if logf != nil {
				logf("world clock sought back to %v: dropped the overlay's write %s, made after it", wc.State().At, d)
			}
		}
		writeClock(w, wc.State(), dropped)
		return
	default:
		w.Header().Set("Allow", "GET, POST")
		clockError(w, http.StatusMethodNotAllowed, errors.New("GET the clock, or POST an action"))
		return
	}
	writeClock(w, wc.State(), nil)
}

// applyClock applies the action in body to wc.
func applyClock(wc *WorldClock, body io.Reader) (dropped []string, err error) {
	var a clockAction
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, errors.New(`want a JSON action: {"action":"play"}, {"action":"pause"}, {"action":"seek","at":"90s"} or {"action":"speed","speed":2}: ` + err.Error())
	}
	switch a.Action {
	case "play":
		wc.Play()
	case "pause":
		wc.Pause()
	case "seek":
		if a.At == "" {
			return nil, errors.New(`seek needs "at": a duration from the recording's start, an RFC 3339 time, rv=N or end`)
		}
		return wc.Seek(a.At)
	case "speed":
		if a.Speed == nil {
			return nil, errors.New(`speed needs "speed": 0 (hold) or more (1: real time)`)
		}
		return nil, wc.SetSpeed(*a.Speed)
	default:
		return nil, errors.New(`unknown action "` + a.Action + `": want play, pause, seek or speed`)
	}
	return nil, nil
}

func writeClock(w http.ResponseWriter, s WorldState, dropped []string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(clockState{At: s.At.String(), Time: s.Time.UTC().Format(time.RFC3339Nano), Length: s.Length.String(),
		Speed: s.Speed, Paused: s.Paused, Dropped: dropped})
}

func clockError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}
