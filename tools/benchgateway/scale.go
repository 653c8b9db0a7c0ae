package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/tools/benchproc"
)

// The scale measurement (-scale, make bench-scale): one broker, three
// gateway processes on loopback ports, the fake upstream. Small chat →
// Anthropic completions at concurrency 16, through one gateway and then
// spread over the three (worker i → gateway i mod 3), interleaved over
// rounds; with each, the gateways' CPU time per completion from
// /proc/<pid>/stat. On a machine with fewer cores than processes the
// throughput cannot grow with gateways; the CPU per request is what
// scales.

// scaleReport is the -scale result.
type scaleReport struct {
	OneRPS, ThreeRPS             []float64 // per round
	OneCPU, ThreeCPU             []float64 // µs of gateway CPU per completion, per round
	OneRPSMedian, ThreeRPSMedian float64
	OneCPUMedian, ThreeCPUMedian float64
	Cores                        int
	LoadBefore, LoadAfter        float64
}

func runScale(o options, w io.Writer) error {
	gw, err := absGateway(o.gateway)
	if err != nil {
		return err
	}
	var links []netLink
	bind := "127.0.0.1:0"
	if o.netns && netnsAvailable() {
		var cleanup func()
		if links, cleanup, err = setupNetns(3); err != nil {
			return err
		}
		defer cleanup()
		bind = "0.0.0.0:0" // reachable from every namespace's veth
	}
	f, err := startFakeOn(bind)
	if err != nil {
		return err
	}
	defer f.srv.Close()
	fport := f.url[strings.LastIndexByte(f.url, ':')+1:]
	b, err := startBrokerOn(bind)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	defer b.stop()
	var eps []*endpoint
	for i := range 3 {
		var p *proc
		if links != nil {
			l := links[i]
			p, err = startGatewayAt(gw, "http://"+l.brokerIP+":"+b.port, b.token, "http://"+l.hostIP+":"+fport,
				l.nsIP+":4000", []string{"ip", "netns", "exec", l.ns})
		} else {
			p, err = startGateway(gw, b, "http://127.0.0.1:"+fport)
		}
		if err != nil {
			return err
		}
		defer p.stop()
		eps = append(eps, &endpoint{name: "gateway" + strconv.Itoa(i), url: p.url, token: p.token, small: chatSmall, pid: p.pid})
	}
	if links != nil {
		fmt.Fprintf(w, "each gateway in its own network namespace (veth, 10.231.<i>.0/24); broker and fake upstream on the host\n")
	} else {
		fmt.Fprintf(w, "loopback ports (network namespaces need root and the ip tool)\n")
	}
	for _, e := range eps { // warm-up
		if _, err := latency(e, chatSmall, 50); err != nil {
			return err
		}
	}
	rep := scaleReport{Cores: runtime.NumCPU(), LoadBefore: benchproc.LoadAvg()}
	measure := func(use []*endpoint) (rps, cpuUs float64, err error) {
		before, err := cpuTime(eps)
		if err != nil {
			return 0, 0, err
		}
		rps, n, err := throughput(use, chatSmall, 16, o.duration)
		if err != nil {
			return 0, 0, err
		}
		after, err := cpuTime(eps)
		if err != nil {
			return 0, 0, err
		}
		return rps, float64((after - before).Microseconds()) / float64(n), nil
	}
	for i := range o.rounds {
		for k := range 2 {
			use := eps[:1]
			if (k+i)%2 == 1 {
				use = eps
			}
			rps, cpu, err := measure(use)
			if err != nil {
				return err
			}
			if len(use) == 1 {
				rep.OneRPS, rep.OneCPU = append(rep.OneRPS, rps), append(rep.OneCPU, cpu)
			} else {
				rep.ThreeRPS, rep.ThreeCPU = append(rep.ThreeRPS, rps), append(rep.ThreeCPU, cpu)
			}
		}
		fmt.Fprintf(os.Stderr, "benchgateway -scale: round %d/%d done\n", i+1, o.rounds)
	}
	rep.LoadAfter = benchproc.LoadAvg()
	rep.OneRPSMedian, rep.ThreeRPSMedian = benchproc.Median(rep.OneRPS), benchproc.Median(rep.ThreeRPS)
	rep.OneCPUMedian, rep.ThreeCPUMedian = benchproc.Median(rep.OneCPU), benchproc.Median(rep.ThreeCPU)
	fmt.Fprintf(w, "small chat→anthropic completions, concurrency 16, %v per run, %d rounds, %d cores\n", o.duration, o.rounds, rep.Cores)
	fmt.Fprintf(w, "  one gateway:    %7.0f req/s   gateway CPU %5.0f µs/request\n", rep.OneRPSMedian, rep.OneCPUMedian)
	fmt.Fprintf(w, "  three gateways: %7.0f req/s   gateway CPU %5.0f µs/request (all three)\n", rep.ThreeRPSMedian, rep.ThreeCPUMedian)
	fmt.Fprintf(w, "  ratio three/one: %.2f× throughput; on %d cores the client, the fake upstream, the broker and the gateways share them, so the ceiling is the machine, and the CPU per request is what scales with cores\n",
		rep.ThreeRPSMedian/rep.OneRPSMedian, rep.Cores)
	fmt.Fprintf(w, "load average: %.2f before, %.2f after\n", rep.LoadBefore, rep.LoadAfter)
	return fleetChecks(w, eps, b, f, links)
}

// cpuTime is the summed user+system time of the endpoints' processes.
func cpuTime(eps []*endpoint) (time.Duration, error) {
	var total time.Duration
	for _, e := range eps {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(e.pid) + "/stat")
		if err != nil {
			return 0, err
		}
		// Fields after the command name (which may hold spaces) in parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			return 0, fmt.Errorf("/proc/%d/stat: %d fields", e.pid, len(f))
		}
		ut, err1 := strconv.ParseInt(f[11], 10, 64) // utime, field 14
		st, err2 := strconv.ParseInt(f[12], 10, 64) // stime, field 15
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("/proc/%d/stat: bad times", e.pid)
		}
		total += time.Duration(ut+st) * time.Second / clockTicks
	}
	return total, nil
}

// clockTicks is USER_HZ, 100 on every Linux the project targets.
const clockTicks = 100
