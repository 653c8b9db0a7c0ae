package benchcpu

import "testing"

func TestCPUTimeAdvancesWithWork(t *testing.T) {
	start := cpuTime()
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	if cpuTime() <= start {
		t.Fatalf("cpu time did not advance (x=%d)", x)
	}
}
