package procs

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestMonitorEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string // nil: unchanged, false
	}{
		{"no GODEBUG", []string{"A=1"}, []string{"A=1", "GODEBUG=" + MonitorSetting}},
		{"empty GODEBUG", []string{"GODEBUG=", "A=1"}, []string{"GODEBUG=" + MonitorSetting, "A=1"}},
		{"other settings kept", []string{"GODEBUG=http2client=0", "A=1"}, []string{"GODEBUG=http2client=0," + MonitorSetting, "A=1"}},
		{"first GODEBUG counts", []string{"GODEBUG=x=1", "GODEBUG=schedtrace=0"}, []string{"GODEBUG=x=1," + MonitorSetting, "GODEBUG=schedtrace=0"}},
		{"operator turned it off", []string{"GODEBUG=schedtrace=0"}, nil},
		{"operator's own trace", []string{"GODEBUG=gctrace=1,schedtrace=1000"}, nil},
		{"a spaced key is not the setting (the runtime ignores it)", []string{"GODEBUG=gctrace=1, schedtrace=1000"}, []string{"GODEBUG=gctrace=1, schedtrace=1000," + MonitorSetting}},
		{"a look-alike name is not the setting", []string{"GODEBUG=xschedtrace=1"}, []string{"GODEBUG=xschedtrace=1," + MonitorSetting}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got, ok := MonitorEnv(in)
			if !slices.Equal(in, tc.in) {
				t.Fatalf("the input was modified: %q", in)
			}
			if tc.want == nil {
				if ok || !slices.Equal(got, tc.in) {
					t.Fatalf("MonitorEnv(%q) = %q, %v; want it unchanged, false", tc.in, got, ok)
				}
				return
			}
			if !ok || !slices.Equal(got, tc.want) {
				t.Fatalf("MonitorEnv(%q) = %q, %v; want %q, true", tc.in, got, ok, tc.want)
			}
		})
	}
}

// TestExecAwake runs this test binary as a child that calls ExecAwake: it
// must come back as a new program with the setting in its environment,
// run the rest of its main once, and the setting must not repeat.
func TestExecAwake(t *testing.T) {
	if os.Getenv("PROCS_EXEC_AWAKE_CHILD") == "1" {
		if err := ExecAwake(); err != nil {
			os.Stdout.WriteString("exec failed: " + err.Error() + "\n")
			os.Exit(3)
		}
		os.Stdout.WriteString("GODEBUG=" + os.Getenv("GODEBUG") + "\n")
		os.Exit(0)
	}
	if runtime.GOOS == "windows" {
		t.Skip("no exec")
	}
	for _, tc := range []struct{ godebug, want string }{
		{"", MonitorSetting},
		{"gctrace=0", "gctrace=0," + MonitorSetting},
		{"schedtrace=0", "schedtrace=0"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestExecAwake$", "-test.count=1")
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") }),
			"PROCS_EXEC_AWAKE_CHILD=1", "GODEBUG="+tc.godebug)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GODEBUG=%q: child: %v (%s)", tc.godebug, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != "GODEBUG="+tc.want {
			t.Errorf("GODEBUG=%q: the child printed %q, want exactly one line GODEBUG=%s", tc.godebug, got, tc.want)
		}
	}
}

func TestSetMonitorEnv(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", MonitorSetting},
		{"http2client=0", "http2client=0," + MonitorSetting},
		{"schedtrace=0", "schedtrace=0"},
	} {
		t.Setenv("GODEBUG", tc.in)
		SetMonitorEnv()
		if got := os.Getenv("GODEBUG"); got != tc.want {
			t.Errorf("GODEBUG=%q: SetMonitorEnv made it %q, want %q", tc.in, got, tc.want)
		}
	}
}
