// Command benchstart measures the start-up of the omp binary as a user
// meets it (`make bench-startup`), over -runs fresh processes each:
//
//   - status: `omp auth-broker status` (no broker configured), from exec to
//     the first byte on its stdout (target: ≤ 20 ms);
//   - print: `omp -p --no-session --model fake/m hi`, from exec to the
//     first request reaching a local fake Anthropic Messages API declared
//     in a throwaway models.yml (target: ≤ 30 ms). The fake answers
//     400, so the process exits right after.
//
// The two commands alternate (status, print, status, …) so a change in the
// machine's load hits both alike. Beside the wall times, each row gives the
// process's own user+system CPU time and minor page faults (getrusage of
// the reaped child), which move far less with the load of a shared host
// than wall time does. Figures are min and median; the one-minute load
// average is printed with them.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/ompgo/omp/tools/benchproc"
)

// sample is one run of one command.
type sample struct {
	wall   time.Duration // exec → the event the row measures
	cpu    time.Duration // user + system of the process
	minflt int64         // minor page faults of the process
}

func main() {
	bin := flag.String("omp", "bin/omp", "the omp binary to measure")
	runs := flag.Int("runs", 30, "processes per command")
	jsonOut := flag.Bool("json", false, "print the figures as JSON")
	flag.Parse()
	if err := run(*bin, *runs, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "benchstart:", err)
		os.Exit(1)
	}
}

func run(bin string, runs int, jsonOut bool) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%w (run make build first)", err)
	}
	home, err := os.MkdirTemp("", "benchstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)

	arrived := make(chan time.Time, 1)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- time.Now():
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"stop"}}`)
	}))
	defer fake.Close()
	agentDir := filepath.Join(home, ".omp", "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		return err
	}
	yml := "providers:\n  fake:\n    baseUrl: " + fake.URL + "\n    apiKey: k\n    api: anthropic-messages\n    models:\n      - id: m\n"
	if err := os.WriteFile(filepath.Join(agentDir, "models.yml"), []byte(yml), 0o600); err != nil {
		return err
	}
	env := append(benchproc.CleanEnv(), "HOME="+home)

	var status, print []sample
	for i := -1; i < runs; i++ { // run -1 warms the page cache and is not counted
		s, err := firstOutput(bin, env, home, "auth-broker", "status")
		if err != nil {
			return fmt.Errorf("auth-broker status: %w", err)
		}
		p, err := firstRequest(bin, env, home, arrived, "-p", "--no-session", "--model", "fake/m", "hi")
		if err != nil {
			return fmt.Errorf("omp -p: %w", err)
		}
		if i >= 0 {
			status, print = append(status, s), append(print, p)
		}
	}
	rows := []row{summarise("auth-broker status → first output", status, 20*time.Millisecond),
		summarise("omp -p → first upstream request", print, 30*time.Millisecond)}
	if jsonOut {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"runs": runs, "load1": benchproc.LoadAvg(), "rows": rows})
	}
	fmt.Printf("%d runs each, alternating; load average %.2f\n", runs, benchproc.LoadAvg())
	fmt.Printf("%-36s %9s %9s %9s %9s %7s %7s %8s\n", "", "wall min", "wall med", "cpu min", "cpu med", "flt min", "flt med", "target")
	for _, r := range rows {
		fmt.Printf("%-36s %7.1fms %7.1fms %7.1fms %7.1fms %7d %7d %6.0fms\n", r.Name, r.WallMinMS, r.WallMedMS, r.CPUMinMS, r.CPUMedMS, r.FaultsMin, r.FaultsMed, r.TargetMS)
	}
	return nil
}

// firstOutput runs the command and times exec → the first byte on stdout.
func firstOutput(bin string, env []string, dir string, args ...string) (sample, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return sample{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	r := bufio.NewReader(out)
	_, rerr := r.ReadByte()
	first := time.Since(start)
	_, _ = io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil {
		return sample{}, err
	}
	if rerr != nil {
		return sample{}, fmt.Errorf("no output: %w", rerr)
	}
	return usage(cmd, first), nil
}

// firstRequest runs the command and times exec → the fake's first request.
func firstRequest(bin string, env []string, dir string, arrived <-chan time.Time, args ...string) (sample, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	var at time.Time
	select {
	case at = <-arrived:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return sample{}, fmt.Errorf("no request within 10 s")
	}
	_ = cmd.Wait() // exits 1: the fake refused the request
	return usage(cmd, at.Sub(start)), nil
}

func usage(cmd *exec.Cmd, wall time.Duration) sample {
	s := sample{wall: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
		s.minflt = ru.Minflt
	}
	return s
}

// row is one command's figures.
type row struct {
	Name      string  `json:"name"`
	WallMinMS float64 `json:"wallMinMs"`
	WallMedMS float64 `json:"wallMedianMs"`
	CPUMinMS  float64 `json:"cpuMinMs"`
	CPUMedMS  float64 `json:"cpuMedianMs"`
	FaultsMin int64   `json:"minorFaultsMin"`
	FaultsMed int64   `json:"minorFaultsMedian"`
	TargetMS  float64 `json:"targetMs"`
}

func summarise(name string, ss []sample, target time.Duration) row {
	var wall, cpu []time.Duration
	var flt []int64
	for _, s := range ss {
		wall, cpu, flt = append(wall, s.wall), append(cpu, s.cpu), append(flt, s.minflt)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return row{Name: name, WallMinMS: ms(slices.Min(wall)), WallMedMS: ms(benchproc.Median(wall)),
		CPUMinMS: ms(slices.Min(cpu)), CPUMedMS: ms(benchproc.Median(cpu)),
		FaultsMin: slices.Min(flt), FaultsMed: benchproc.Median(flt), TargetMS: ms(target)}
}
