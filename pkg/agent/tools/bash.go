package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Bash defaults.
const (
	DefaultBashTimeout = 300 * time.Second
	killGrace          = 2 * time.Second
	updateEvery        = 100 * time.Millisecond
)

// BashDetails are the details of a bash result.
type BashDetails struct {
	ExitCode *int `json:"exitCode,omitempty"`
	Meta     *struct {
		Truncation *Truncation `json:"truncation,omitempty"`
	} `json:"meta,omitempty"`
}

var (
	envNameRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	headTailRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s*\|\s*(head|tail)(\s+(-n\s*\d+|-\d+))?\s*$`) })
	cdPrefixRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*cd\s+("[^"]*"|'[^']*'|[^\s;&|]+)\s*&&\s*`) })
)

// BashOptions configure the bash tool (settings and environment).
type BashOptions struct {
	// Shell is the shell path (default: bash on PATH, else /bin/sh).
	Shell string
	// NoLogin runs `-c` instead of `-l -c` (PI_BASH_NO_LOGIN).
	NoLogin bool
	// NoCI leaves CI unset (PI_BASH_NO_CI).
	NoCI bool
	// Prefix is prepended to every command (PI_SHELL_PREFIX).
	Prefix string
	// KeepHeadTail disables the safe `| head`/`| tail` stripping.
	KeepHeadTail bool
}

// Bash returns the bash tool: a fresh shell per call in its own
// process group, stdout and stderr merged through a Sink, a timeout and
// abort that kill the group (TERM, then KILL after 2 s).
func Bash(env *Env, opt BashOptions) *Tool {
	return &Tool{
		Name: "bash",
		Description: "Run a shell command in a fresh non-interactive shell (cwd and variables do not carry over " +
			"between calls) with stdin closed. stdout and stderr are merged; the last 50KB are returned and the full " +
			"output is kept as an artifact:// when longer. Default timeout 300 s (timeout: 1-3600 s). A non-zero exit " +
			"code is reported as an error. Prefer read, grep, find, edit and write over cat, grep, find, sed and echo.",
		Parameters: rawSchema(`{"type":"object","properties":{
			"command":{"type":"string","description":"The command to run"},
			"timeout":{"type":"number","description":"Timeout in seconds (1-3600, default 300)"},
			"cwd":{"type":"string","description":"Working directory, relative to the session working directory"},
			"env":{"type":"object","description":"Extra environment variables"},
			"pty":{"type":"boolean","description":"Ignored"},
			"async":{"type":"boolean","description":"Not supported"}},"required":["command"]}`),
		Run: func(ctx context.Context, args map[string]any, update func(Result)) (Result, error) {
			return runBash(ctx, env, opt, args, update)
		},
	}
}

func runBash(ctx context.Context, env *Env, opt BashOptions, args map[string]any, update func(Result)) (Result, error) {
	if boolean(args, "async") {
		return Result{}, Errorf("async execution is disabled (async.enabled is false)")
	}
	command := str(args, "command")
	extra := map[string]string{}
	if m, ok := args["env"].(map[string]any); ok {
		for k, v := range m {
			s, isStr := v.(string)
			if !envNameRE().MatchString(k) || !isStr {
				return Result{}, Errorf("Invalid environment variable %q: names must match ^[A-Za-z_][A-Za-z0-9_]*$ and values be strings", k)
			}
			extra[k] = s
		}
	}
	timeout := DefaultBashTimeout
	if t, ok := num(args, "timeout"); ok {
		timeout = time.Duration(min(max(t, 1), 3600)) * time.Second
	}
	dir := str(args, "cwd")
	if !strings.Contains(command, "\n") {
		if !opt.KeepHeadTail && !strings.Contains(command, "<<") {
			command = headTailRE().ReplaceAllString(command, "")
			command = strings.TrimSuffix(strings.TrimSpace(command), " 2>&1")
		}
		if m := cdPrefixRE().FindStringSubmatch(command); m != nil && dir == "" {
			dir = strings.Trim(m[1], `"'`)
			command = command[len(m[0]):]
		}
	}
	wd := env.Cwd
	if dir != "" {
		wd = env.Resolve(dir)
		st, err := os.Stat(wd)
		if err != nil {
			return Result{}, Errorf("Working directory does not exist: %s", dir)
		}
		if !st.IsDir() {
			return Result{}, Errorf("Working directory is not a directory: %s", dir)
		}
	}
	r, err := execBash(ctx, env, opt, command, wd, extra, timeout, update)
	if err != nil {
		return Result{}, err
	}
	out, tr, werr, timedOut, aborted := r.out, r.tr, r.werr, r.timedOut, r.aborted
	if aborted {
		return Result{}, &AbortError{Msg: "Command aborted"}
	}
	text := out
	if text == "" {
		text = "(no output)"
	}
	var d BashDetails
	if tr != nil {
		text += tr.Notice()
		d.Meta = &struct {
			Truncation *Truncation `json:"truncation,omitempty"`
		}{tr}
	}
	if timedOut {
		return Result{}, &Error{Msg: out + fmt.Sprintf("\n\nCommand timed out after %d seconds", int(timeout/time.Second)), Details: d}
	}
	var ee *exec.ExitError
	code := 0
	switch {
	case werr == nil:
	case errors.As(werr, &ee) && ee.ExitCode() >= 0:
		code = ee.ExitCode()
	default:
		return Result{}, &Error{Msg: text + "\n\nCommand missing exit status", Details: d}
	}
	d.ExitCode = &code
	if code != 0 {
		return Result{}, &Error{Msg: text + fmt.Sprintf("\n\nCommand exited with code %d", code), Details: d}
	}
	return TextResult(text, d), nil
}

// bashRun is what one shell execution produced.
type bashRun struct {
	out               string
	tr                *Truncation
	werr              error
	timedOut, aborted bool
}

// execBash runs command in wd in its own process group (the shared core
// of the bash tool and the user's !cmd / RPC bash).
func execBash(ctx context.Context, env *Env, opt BashOptions, command, wd string, extra map[string]string, timeout time.Duration, update func(Result)) (bashRun, error) {
	if opt.Prefix != "" {
		command = opt.Prefix + " " + command
	}
	shell := opt.Shell
	if shell == "" {
		if p, err := exec.LookPath("bash"); err == nil {
			shell = p
		} else {
			shell = "/bin/sh"
		}
	}
	argv := []string{"-l", "-c", command}
	if opt.NoLogin {
		argv = argv[1:]
	}
	cmd := exec.Command(shell, argv...)
	cmd.Dir = wd
	environ := env.Environ
	if environ == nil {
		environ = os.Environ()
	}
	environ = append(append([]string(nil), environ...),
		"PAGER=cat", "GIT_PAGER=cat", "GIT_EDITOR=true", "EDITOR=true", "GIT_TERMINAL_PROMPT=0")
	if !opt.NoCI {
		environ = append(environ, "CI=true")
	}
	for k, v := range extra {
		environ = append(environ, k+"="+v)
	}
	cmd.Env = environ
	sink := &Sink{Tool: "bash", Artifacts: env.Artifacts}
	cmd.Stdout, cmd.Stderr = sink, sink
	setProcessGroup(cmd)
	// A background child keeping the output pipe open must not hold the
	// call once the shell has exited.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return bashRun{}, Errorf("Cannot start %s: %v", shell, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	tick := time.NewTicker(updateEvery)
	defer tick.Stop()
	var werr error
	timedOut, aborted := false, false
wait:
	for {
		select {
		case werr = <-waited:
			break wait
		case <-tick.C:
			update(TextResult(sink.Snapshot(), nil))
		case <-timer.C:
			timedOut = true
			werr = killGroup(cmd, waited)
			break wait
		case <-ctx.Done():
			aborted = true
			werr = killGroup(cmd, waited)
			break wait
		}
	}
	out, tr := sink.Close()
	return bashRun{out: out, tr: tr, werr: werr, timedOut: timedOut, aborted: aborted}, nil
}

// CommandResult is a user shell command's outcome (RPC bash).
type CommandResult struct {
	Output     string `json:"output"`
	ExitCode   *int   `json:"exitCode,omitempty"`
	Cancelled  bool   `json:"cancelled"`
	Truncated  bool   `json:"truncated"`
	ArtifactID string `json:"artifactId,omitempty"`
}

// RunCommand runs a user's shell command (`!cmd`, RPC bash) like the bash
// tool does, without its argument rewriting: cancelled when ctx ends.
func RunCommand(ctx context.Context, env *Env, opt BashOptions, command string) (CommandResult, error) {
	r, err := execBash(ctx, env, opt, command, env.Cwd, nil, DefaultBashTimeout, func(Result) {})
	if err != nil {
		return CommandResult{}, err
	}
	res := CommandResult{Output: r.out, Cancelled: r.aborted || r.timedOut, Truncated: r.tr != nil}
	if r.tr != nil {
		res.ArtifactID = r.tr.ArtifactID
	}
	var ee *exec.ExitError
	switch {
	case r.werr == nil && !res.Cancelled:
		res.ExitCode = new(int)
	case errors.As(r.werr, &ee) && ee.ExitCode() >= 0 && !res.Cancelled:
		code := ee.ExitCode()
		res.ExitCode = &code
	}
	return res, nil
}
