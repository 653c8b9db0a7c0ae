// Package benchproc holds what the whole-process benchmark tools
// (tools/benchvault, tools/benchgateway) share: a free loopback port,
// an environment that cannot leak the operator's broker settings into a
// measured process, the machine's load average, and the median.
package benchproc

import (
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// CleanEnv is this process's environment without HOME and the OMP_, PI_
// and XDG_ variables, so a started broker or gateway uses only the
// throwaway home and settings the tool gives it.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "OMP_") || strings.HasPrefix(k, "PI_") || strings.HasPrefix(k, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// LoadAvg is the one-minute load average (0 when unknown), reported beside
// the figures so a reader can tell a busy machine.
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

// Median returns the median of xs (0 for none), leaving xs unchanged.
func Median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
