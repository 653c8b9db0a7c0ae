package ompcli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/hostapi"
)

// Host and LocalVault are the contract with omp-host (internal/hostapi).
type (
	Host       = hostapi.Host
	LocalVault = hostapi.LocalVault
)

// HostBinEnv names the host binary to exec, ahead of the look-up beside
// the client and in PATH.
const HostBinEnv = "OMP_HOST_BIN"

// hostBinName is the host binary's file name.
const hostBinName = "omp-host"

// host returns the host implementation. In the client omp (none linked)
// it replaces the process with omp-host running the same command line and
// does not return, unless omp-host cannot be found or run: then the error
// says what to install.
func (a *app) host() (Host, error) {
	if a.hostImpl != nil {
		return a.hostImpl, nil
	}
	if a.execHost == nil { // an app built by a test
		if testHost == nil {
			return nil, errors.New("this command needs omp-host, which this program cannot run")
		}
		return testHost, nil
	}
	path, err := findHostBin(config.ProcessEnv(a.environ).Get(HostBinEnv))
	if err != nil {
		return nil, err
	}
	if isSelf(path) { // a misinstall would exec itself forever
		return nil, &exitError{code: 1, msg: fmt.Sprintf("error: %s is this omp client, not omp-host; install the omp-host binary (make build writes bin/omp-host)", path)}
	}
	return nil, a.execHost(path)
}

// findHostBin looks omp-host up: explicit (from $OMP_HOST_BIN) when set,
// else beside the running executable, else in PATH.
func findHostBin(explicit string) (string, error) {
	if explicit != "" {
		if isExecutable(explicit) {
			return explicit, nil
		}
		return "", &exitError{code: 1, msg: fmt.Sprintf("error: %s=%s is not an executable file; point it at the omp-host binary (it serves and opens the local vault for omp)", HostBinEnv, explicit)}
	}
	var beside string
	if exe, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		beside = filepath.Join(filepath.Dir(exe), hostBinName)
		if isExecutable(beside) {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(hostBinName); err == nil {
		return p, nil
	}
	return "", &exitError{code: 1, msg: fmt.Sprintf("error: this command runs in omp-host, which is not installed: install the omp-host binary next to omp (%s) or in PATH, or set %s to its path", beside, HostBinEnv)}
}

// isSelf reports whether path is the running executable.
func isSelf(path string) bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	a, errA := os.Stat(exe)
	b, errB := os.Stat(path)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// execProcess replaces the process with path, same arguments and
// environment: stdin, stdout, stderr (a terminal stays the controlling
// one), signals and the exit code are the host's from here on.
func execProcess(path string) error {
	err := syscall.Exec(path, os.Args, os.Environ())
	return &exitError{code: 1, msg: fmt.Sprintf("error: run %s: %v", path, err)}
}
