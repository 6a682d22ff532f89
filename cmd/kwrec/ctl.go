package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/replay"
)

func newCtlCmd() *cobra.Command {
	conn := genericclioptions.NewConfigFlags(false)
	cmd := &cobra.Command{
		Use:   "ctl now|play|pause|seek POINT|speed X",
		Short: "Drive the world clock of a running kwrec serve",
		Long: `Drive the world clock of a running kwrec serve, which every client of
the server shares: now prints where the world is, play and pause start and
hold it, seek moves it to POINT (a duration from the recording's start, an
RFC 3339 time, rv=RESOURCEVERSION or end), speed sets how many recorded
seconds pass in a wall second (0 holds it). Moving forward, every open
watch sends the recorded changes it passes at once; moving back, every open
watch ends with a 410 Expired and its client re-lists at the new time, and
the overlay's writes made after it are dropped (listed on stderr).

The server is reached with kubectl's connection flags: --kubeconfig the
file kwrec serve --kubeconfig-out wrote.`,
		Example: `  kwrec serve incident.kwrec.zst --at 14m --paused --kubeconfig-out k.yaml &
  kwrec ctl --kubeconfig k.yaml now
  kwrec ctl --kubeconfig k.yaml seek 2026-12-01T14:05:00Z
  kwrec ctl --kubeconfig k.yaml speed 10
  kwrec ctl --kubeconfig k.yaml play`,
		Args: ctlArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := conn.ToRESTConfig()
			if err != nil {
				return err
			}
			return ctlRun(cmd, cfg, args)
		},
	}
	conn.AddFlags(cmd.Flags())
	return cmd
}

// ctlArgs checks ctl's action and its argument.
func ctlArgs(_ *cobra.Command, args []string) error {
	want := map[string]int{"now": 1, "play": 1, "pause": 1, "seek": 2, "speed": 2}
	if len(args) == 0 {
		return fmt.Errorf("ctl needs an action: now, play, pause, seek POINT or speed X")
	}
	n, ok := want[args[0]]
	switch {
	case !ok:
		return fmt.Errorf("unknown action %q: want now, play, pause, seek POINT or speed X", args[0])
	case len(args) != n && n == 2:
		return fmt.Errorf("%s takes one argument (%s)", args[0], map[string]string{"seek": "POINT", "speed": "X"}[args[0]])
	case len(args) != n:
		return fmt.Errorf("%s takes no argument", args[0])
	}
	return nil
}

// clockReply is what the server answers of its clock (replay.ClockPath).
type clockReply struct {
	At      string   `json:"at"`
	Time    string   `json:"time"`
	Length  string   `json:"length"`
	Speed   float64  `json:"speed"`
	Paused  bool     `json:"paused"`
	Dropped []string `json:"dropped"`
	Error   string   `json:"error"`
}

// ctlRun does action args on the clock of the server cfg reaches, and
// prints where its world is then.
func ctlRun(cmd *cobra.Command, cfg *rest.Config, args []string) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	method, body := http.MethodGet, []byte(nil)
	switch args[0] {
	case "play", "pause":
		body, _ = json.Marshal(map[string]string{"action": args[0]})
	case "seek":
		body, _ = json.Marshal(map[string]string{"action": "seek", "at": args[1]})
	case "speed":
		s, err := strconv.ParseFloat(args[1], 64)
		if err != nil {
			return fmt.Errorf("speed %q: want a number, 0 (hold) or more (1: real time)", args[1])
		}
		body, _ = json.Marshal(map[string]any{"action": "speed", "speed": s})
	}
	if body != nil {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(cmd.Context(), method, strings.TrimSuffix(cfg.Host, "/")+replay.ClockPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var c clockReply
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%s: %s, not a kwrec serve clock (is it a kwrec serve?): %s", cfg.Host, resp.Status, bytes.TrimSpace(raw))
	}
	if c.Error != "" {
		return fmt.Errorf("%s", c.Error)
	}
	for _, d := range c.Dropped {
		fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: dropped the overlay's write %s, made after the new time\n", d)
	}
	state := "playing"
	switch {
	case c.Paused:
		state = "paused"
	case c.Speed == 0:
		state = "held (speed 0)"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "world at %s (%s) of %s, speed %v, %s\n", c.At, c.Time, c.Length, c.Speed, state)
	return nil
}
