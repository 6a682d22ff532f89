package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
)

// sizeUnits are what parseSize takes after a number: decimal (kB, MB,
// GB, TB, and Kubernetes' k, M, G, T) and binary (KiB, MiB, GiB, TiB, and
// Ki, Mi, Gi, Ti); the B is optional.
var sizeUnits = map[string]float64{
	"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
}

// parseSize parses a size such as 100MB, 1GiB, 500M or 1048576; "" is 0.
func parseSize(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	num := strings.TrimRight(s, "kKMGTiB")
	unit := strings.TrimSuffix(s[len(num):], "B")
	mult, ok := sizeUnits[unit]
	n, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(n > 0) || n*mult > 1<<62 {
		return 0, errors.New("want a positive size such as 100MB, 1GiB or 500Mi")
	}
	return int64(n * mult), nil
}

// outName is what the recording is written to, as a user names it: -o,
// or with --max-size or --rotate the pattern of its parts.
func (f *recordFlags) outName() string {
	if f.maxSize == "" && f.rotate == 0 {
		return f.out
	}
	dir, base := filepath.Split(cassettes.PartName(f.out, 1))
	i := strings.LastIndex(base, "-0001")
	return dir + base[:i] + "-*" + base[i+len("-0001"):]
}

// removeLeftovers removes the temporary files a recorder of the parts of
// out stopped mid-way left ([cassettes.Leftovers]), each named on log:
// they would hold disk beyond the retention's budget.
func removeLeftovers(out string, log io.Writer) {
	for _, n := range cassettes.Leftovers(out) {
		if err := os.Remove(n); err == nil {
			fmt.Fprintf(log, "kwrec: removed %s, a temporary file left by a recorder that was stopped\n", n)
		}
	}
}

// oneCassette is the Args of a command that reads one cassette: several
// arguments are most likely a rotated recording's parts, expanded by the
// shell from an unquoted pattern.
func oneCassette(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("%s takes one cassette, not %d files; for the parts of a rotated recording quote the pattern so the shell leaves it to kwrec: kwrec %s 'rec-*.kwrec.zst'", cmd.Name(), len(args), cmd.Name())
	}
	return cobra.ExactArgs(1)(cmd, args)
}
