package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// fixture returns a temp project and the tool set over it.
func fixture(t *testing.T, files map[string]string) (*Set, *Env) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := &Env{Cwd: dir, Home: dir, Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir},
		Artifacts: &Artifacts{Dir: filepath.Join(dir, ".artifacts")}}
	return Builtin(env, BashOptions{NoLogin: true}, &TodoList{}, nil), env
}

type call struct {
	name      string
	tool      string
	args      string
	wantErr   bool
	want      []string // substrings of the text
	wantExact string
	check     func(t *testing.T, env *Env, res Result)
}

func runCalls(t *testing.T, set *Set, env *Env, calls []call) {
	t.Helper()
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			res, isErr, _ := set.Execute(context.Background(), c.tool, json.RawMessage(c.args), nil)
			text := ""
			for _, b := range res.Content {
				text += b.Text
			}
			if isErr != c.wantErr {
				t.Fatalf("isError = %v, want %v; text:\n%s", isErr, c.wantErr, text)
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q:\n%s", w, text)
				}
			}
			if c.wantExact != "" && text != c.wantExact {
				t.Errorf("text = %q\nwant %q", text, c.wantExact)
			}
			if c.check != nil {
				c.check(t, env, res)
			}
		})
	}
}

func fileIs(path, want string) func(t *testing.T, env *Env, res Result) {
	return func(t *testing.T, env *Env, _ Result) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(env.Cwd, path))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("%s = %q, want %q", path, got, want)
		}
	}
}

func TestExecuteContract(t *testing.T) {
	set, env := fixture(t, map[string]string{"a.txt": "x"})
	runCalls(t, set, env, []call{
		{name: "unknown tool", tool: "eval", args: `{}`, wantErr: true, wantExact: "Tool eval not found"},
		{name: "missing required", tool: "read", args: `{}`, wantErr: true,
			want: []string{`Validation failed for tool "read":`, "  - path: is required (was missing)", "Received arguments:"}},
		{name: "wrong type", tool: "read", args: `{"path":5}`, wantErr: true, want: []string{"path: must be a string"}},
		{name: "not an object", tool: "read", args: `[1]`, wantErr: true, want: []string{"must be a JSON object"}},
		{name: "intent argument i stripped", tool: "read", args: `{"path":"a.txt","i":"look"}`, wantExact: "x"},
		{name: "strict todo rejects unknown", tool: "todo", args: `{"ops":[{"op":"view"}],"extra":1}`, wantErr: true, want: []string{"extra: unknown property"}},
	})
}

func TestRead(t *testing.T) {
	long := strings.Repeat("line\n", 2500)
	set, env := fixture(t, map[string]string{
		"a.txt":    "one\ntwo\nthree\n",
		"long.txt": long,
		"bin.dat":  "abc\x00def",
		"img.png":  "\x89PNG\r\n\x1a\n0000",
		"d/x.go":   "package x",
		"d/sub/y":  "",
	})
	runCalls(t, set, env, []call{
		{name: "whole", tool: "read", args: `{"path":"a.txt"}`, wantExact: "one\ntwo\nthree"},
		{name: "offset limit", tool: "read", args: `{"path":"a.txt","offset":2,"limit":1}`,
			wantExact: "two\n\n[1 more lines in file. Use offset=3 to continue]"},
		{name: "absolute", tool: "read", args: `{"path":"` + filepath.Join(env.Cwd, "a.txt") + `","offset":3}`, wantExact: "three"},
		{name: "path:N-M range selector", tool: "read", args: `{"path":"a.txt:2-3"}`, wantExact: "two\nthree"},
		{name: "offset past end", tool: "read", args: `{"path":"a.txt","offset":9}`, wantErr: true,
			wantExact: "Offset 9 is beyond end of file (3 lines total)"},
		{name: "line cap", tool: "read", args: `{"path":"long.txt"}`,
			want: []string{"[Showing lines 1-2000 of 2500. Use offset=2001 to continue]"},
			check: func(t *testing.T, _ *Env, res Result) {
				if d := res.Details.(ReadDetails); d.Truncation == nil || d.Truncation.TruncatedBy != "lines" {
					t.Fatalf("details = %+v", d)
				}
			}},
		{name: "missing", tool: "read", args: `{"path":"nope.txt"}`, wantErr: true, wantExact: "File not found: nope.txt"},
		{name: "binary", tool: "read", args: `{"path":"bin.dat"}`, wantErr: true, wantExact: "Cannot read binary file: bin.dat"},
		{name: "image", tool: "read", args: `{"path":"img.png"}`, want: []string{"Read image file [image/png]"},
			check: func(t *testing.T, _ *Env, res Result) {
				if len(res.Content) != 2 || res.Content[1].Type != llm.ContentImage || res.Content[1].MimeType != "image/png" {
					t.Fatalf("content = %+v", res.Content)
				}
			}},
		{name: "directory", tool: "read", args: `{"path":"d"}`, wantExact: "sub/\nx.go"},
		{name: "unknown scheme", tool: "read", args: `{"path":"skill://x"}`, wantErr: true, want: []string{"Unknown protocol: skill://"}},
		{name: "artifact not numeric", tool: "read", args: `{"path":"artifact://x"}`, wantErr: true, wantExact: "artifact:// ID must be numeric, got: x"},
	})
}

func TestWrite(t *testing.T) {
	set, env := fixture(t, map[string]string{"gen.go": "// Code generated by x. DO NOT EDIT.\npackage x\n"})
	runCalls(t, set, env, []call{
		{name: "create with parents", tool: "write", args: `{"path":"a/b/c.txt","content":"héllo"}`,
			wantExact: "Successfully wrote 6 bytes to a/b/c.txt", check: fileIs("a/b/c.txt", "héllo")},
		{name: "overwrite", tool: "write", args: `{"path":"a/b/c.txt","content":"new"}`, check: fileIs("a/b/c.txt", "new")},
		{name: "generated refused", tool: "write", args: `{"path":"gen.go","content":"x"}`, wantErr: true,
			wantExact: "Refusing to overwrite auto-generated file: gen.go",
			check:     fileIs("gen.go", "// Code generated by x. DO NOT EDIT.\npackage x\n")},
		{name: "shebang executable", tool: "write", args: `{"path":"run.sh","content":"#!/bin/sh\necho hi\n"}`,
			check: func(t *testing.T, env *Env, res Result) {
				st, _ := os.Stat(filepath.Join(env.Cwd, "run.sh"))
				if st.Mode().Perm() != 0o755 || !res.Details.(WriteDetails).MadeExecutable {
					t.Fatalf("mode %v details %+v", st.Mode(), res.Details)
				}
			}},
		{name: "directory target", tool: "write", args: `{"path":"a","content":"x"}`, wantErr: true, want: []string{"is a directory"}},
	})
}

func TestEdit(t *testing.T) {
	set, env := fixture(t, map[string]string{
		"a.go":   "package a\n\nfunc A() int {\n\treturn 1\n}\n",
		"dup.go": "x := 1\ny := 1\nx := 1\n",
		"crlf":   "\uFEFFone\r\ntwo\r\n",
		"ws.txt": "alpha   \nbeta\t\ngamma\n",
	})
	runCalls(t, set, env, []call{
		{name: "canonical", tool: "edit", args: `{"path":"a.go","edits":[{"old_text":"return 1","new_text":"return 2"}]}`,
			want: []string{"[a.go]", "-\treturn 1", "+\treturn 2"}, check: func(t *testing.T, env *Env, res Result) {
				fileIs("a.go", "package a\n\nfunc A() int {\n\treturn 2\n}\n")(t, env, res)
				if d := res.Details.(EditDetails); d.FirstChangedLine != 4 || !strings.Contains(d.Diff, "@@") {
					t.Fatalf("details = %+v", d)
				}
			}},
		{name: "flat alias old_string", tool: "edit", args: `{"path":"a.go","old_string":"func A","new_string":"func B"}`,
			check: fileIs("a.go", "package a\n\nfunc B() int {\n\treturn 2\n}\n")},
		{name: "alias oldText in edits", tool: "edit", args: `{"path":"a.go","edits":[{"oldText":"int","newText":"int64"}]}`,
			check: fileIs("a.go", "package a\n\nfunc B() int64 {\n\treturn 2\n}\n")},
		{name: "non-unique", tool: "edit", args: `{"path":"dup.go","edits":[{"old_text":"x := 1","new_text":"x := 2"}]}`,
			wantErr: true, want: []string{"Found 2 occurrences in dup.go:", "  1 | x := 1", "Add more context lines to disambiguate."},
			check: fileIs("dup.go", "x := 1\ny := 1\nx := 1\n")},
		{name: "replace_all", tool: "edit", args: `{"path":"dup.go","old_text":"x := 1","new_text":"x := 2","replace_all":true}`,
			check: fileIs("dup.go", "x := 2\ny := 1\nx := 2\n")},
		{name: "all or nothing", tool: "edit", args: `{"path":"dup.go","edits":[{"old_text":"y := 1","new_text":"y := 3"},{"old_text":"zzz","new_text":"q"}]}`,
			wantErr: true, want: []string{"Could not find the exact text in dup.go."}, check: fileIs("dup.go", "x := 2\ny := 1\nx := 2\n")},
		{name: "no change", tool: "edit", args: `{"path":"dup.go","edits":[{"old_text":"y := 1","new_text":"y := 1"}]}`,
			wantErr: true, wantExact: "Edits to dup.go resulted in no changes being made."},
		{name: "empty old", tool: "edit", args: `{"path":"dup.go","edits":[{"old_text":"","new_text":"a"}]}`,
			wantErr: true, wantExact: "old_text must not be empty."},
		{name: "missing file", tool: "edit", args: `{"path":"nope","edits":[{"old_text":"a","new_text":"b"}]}`,
			wantErr: true, wantExact: "File not found: nope"},
		{name: "crlf and bom kept", tool: "edit", args: `{"path":"crlf","edits":[{"old_text":"two","new_text":"2"}]}`,
			check: fileIs("crlf", "\uFEFFone\r\n2\r\n")},
		{name: "trailing whitespace fallback", tool: "edit", args: `{"path":"ws.txt","edits":[{"old_text":"alpha\nbeta","new_text":"A\nB"}]}`,
			check: fileIs("ws.txt", "A\nB\ngamma\n")},
		{name: "patch input rejected", tool: "edit", args: `{"input":"*** Begin Patch"}`, wantErr: true,
			wantExact: "edit takes {path, edits:[{old_text, new_text, all?}]}; patch-text input is not supported"},
	})
}

func TestBash(t *testing.T) {
	set, env := fixture(t, map[string]string{"sub/f": ""})
	runCalls(t, set, env, []call{
		{name: "ok", tool: "bash", args: `{"command":"echo hi; echo err >&2"}`, wantExact: "hi\nerr\n",
			check: func(t *testing.T, _ *Env, res Result) {
				if c := res.Details.(BashDetails).ExitCode; c == nil || *c != 0 {
					t.Fatalf("exit = %v", c)
				}
			}},
		{name: "cwd is the session cwd", tool: "bash", args: `{"command":"pwd"}`, want: []string{env.Cwd}},
		{name: "cwd param", tool: "bash", args: `{"command":"ls","cwd":"sub"}`, wantExact: "f\n"},
		{name: "cd prefix", tool: "bash", args: `{"command":"cd sub && ls"}`, wantExact: "f\n"},
		{name: "env and CI", tool: "bash", args: `{"command":"echo $FOO $CI $PAGER","env":{"FOO":"bar"}}`, wantExact: "bar true cat\n"},
		{name: "bad env name", tool: "bash", args: `{"command":"true","env":{"1X":"a"}}`, wantErr: true, want: []string{"Invalid environment variable"}},
		{name: "no output", tool: "bash", args: `{"command":"true"}`, wantExact: "(no output)"},
		{name: "exit code", tool: "bash", args: `{"command":"echo x; exit 3"}`, wantErr: true, wantExact: "x\n\n\nCommand exited with code 3"},
		{name: "missing cwd", tool: "bash", args: `{"command":"true","cwd":"nope"}`, wantErr: true, wantExact: "Working directory does not exist: nope"},
		{name: "async rejected", tool: "bash", args: `{"command":"true","async":true}`, wantErr: true,
			wantExact: "async execution is disabled (async.enabled is false)"},
		{name: "ansi stripped", tool: "bash", args: `{"command":"printf '\\033[31mred\\033[0m\\r\\n'"}`, wantExact: "red\n"},
		{name: "head stripped", tool: "bash", args: `{"command":"seq 1 5 | head -n 2"}`, wantExact: "1\n2\n3\n4\n5\n"},
		{name: "big output spills to an artifact", tool: "bash", args: `{"command":"seq 1 30000"}`,
			want: []string{"30000\n", "[Showing last", "of 30000 lines", "Full: artifact://0]"},
			check: func(t *testing.T, env *Env, res Result) {
				data, err := os.ReadFile(filepath.Join(env.Artifacts.Dir, "0.bash.log"))
				if err != nil || !strings.HasPrefix(string(data), "1\n2\n") || !strings.HasSuffix(string(data), "30000\n") {
					t.Fatalf("artifact: %v, %d bytes", err, len(data))
				}
				res2, isErr := Read(env).Run(context.Background(), map[string]any{"path": "artifact://0", "offset": float64(29999)}, nil)
				if isErr != nil || res2.Content[0].Text != "29999\n30000" {
					t.Fatalf("artifact read = %v %+v", isErr, res2)
				}
			}},
	})
}

func TestBashTimeoutKillsTheGroup(t *testing.T) {
	set, env := fixture(t, nil)
	pidFile := filepath.Join(env.Cwd, "bg.pid")
	marker := filepath.Join(env.Cwd, "survived")
	// A background subshell of the group records its pid (the foreground
	// waits for it) and would touch the marker once its sleep ended.
	cmd := `(echo $BASHPID > ` + pidFile + `; sleep 60; touch ` + marker + `) & ` +
		`until [ -s ` + pidFile + ` ]; do sleep 0.01; done; echo started; sleep 60`
	args, _ := json.Marshal(map[string]any{"command": cmd, "timeout": 1})
	start := time.Now()
	res, isErr, abort := set.Execute(context.Background(), "bash", args, nil)
	if !isErr || abort != nil || !strings.HasSuffix(res.Content[0].Text, "started\n\n\nCommand timed out after 1 seconds") {
		t.Fatalf("result = %v %v %q", isErr, abort, res.Content[0].Text)
	}
	// The call ends on the timeout, not when the group's sleeps do (a hang
	// guard far above the 1 s timeout plus the kill grace).
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %v", d)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file %q: %v", data, err)
	}
	for deadline := time.Now().Add(10 * time.Second); !processGone(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a process of the group survived the kill")
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a process of the group ran on after the timeout")
	}
}

func TestBashAbort(t *testing.T) {
	set, _ := fixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Abort once a partial update has shown the command's first output.
	var updates int
	update := func(r Result) {
		updates++
		if len(r.Content) > 0 && strings.Contains(r.Content[0].Text, "x") {
			cancel()
		}
	}
	res, isErr, abort := set.Execute(ctx, "bash", json.RawMessage(`{"command":"echo x; sleep 30"}`), update)
	var ab *AbortError
	if !isErr || abort == nil || res.Content[0].Text != "Command aborted" {
		t.Fatalf("abort = %v, %v, %+v", abort, isErr, res)
	}
	if !errorsAs(abort, &ab) {
		t.Fatalf("not an AbortError: %T", abort)
	}
	if updates == 0 {
		t.Fatal("no partial updates")
	}
}

func TestGrep(t *testing.T) {
	set, env := fixture(t, map[string]string{
		"a.go":         "package a\nfunc Foo() {}\n// foo\n",
		"b/b.go":       "package b\nvar x = Foo\n",
		"b/c.txt":      "Foo in text\n",
		"ignored/i.go": "Foo\n",
		".gitignore":   "ignored/\n",
		"bin":          "Foo\x00",
	})
	runCalls(t, set, env, []call{
		{name: "content", tool: "grep", args: `{"pattern":"Foo","glob":"*.go"}`, wantExact: "a.go:2: func Foo() {}\nb/b.go:2: var x = Foo"},
		{name: "smart case", tool: "grep", args: `{"pattern":"foo","path":"a.go"}`, wantExact: "a.go:2: func Foo() {}\na.go:3: // foo"},
		{name: "case sensitive when asked", tool: "grep", args: `{"pattern":"foo","path":"a.go","ignoreCase":false}`, wantExact: "a.go:3: // foo"},
		{name: "context", tool: "grep", args: `{"pattern":"var","path":"b","context":1}`, wantExact: "b/b.go-1- package b\nb/b.go:2: var x = Foo"},
		{name: "files", tool: "grep", args: `{"pattern":"Foo","outputMode":"files_with_matches"}`, wantExact: "a.go\nb/b.go\nb/c.txt"},
		{name: "count", tool: "grep", args: `{"pattern":"Foo","outputMode":"count","glob":"*.go"}`, wantExact: "a.go:1\nb/b.go:1"},
		{name: "limit", tool: "grep", args: `{"pattern":"Foo","limit":1}`, want: []string{"a.go:2:", "[Match limit reached (1)."}},
		{name: "invalid regex literal", tool: "grep", args: `{"pattern":"Foo(","path":"a.go"}`, wantExact: "[Invalid regex, searched as literal text]\na.go:2: func Foo() {}"},
		{name: "none", tool: "grep", args: `{"pattern":"zzz"}`, wantExact: "No matches found"},
		{name: "bad mode", tool: "grep", args: `{"pattern":"x","outputMode":"lines"}`, wantErr: true, want: []string{"outputMode: must be one of"}},
		{name: "missing path", tool: "grep", args: `{"pattern":"x","path":"nope"}`, wantErr: true, wantExact: "Path not found: nope"},
	})
}

func TestFind(t *testing.T) {
	set, env := fixture(t, map[string]string{
		"a.go": "", "b/b_test.go": "", "b/c/d.go": "", ".hidden/x.go": "", "ignored/i.go": "", ".gitignore": "ignored/\n",
	})
	runCalls(t, set, env, []call{
		{name: "basename any depth", tool: "find", args: `{"pattern":"*.go"}`, wantExact: "a.go\nb/b_test.go\nb/c/d.go"},
		{name: "path glob", tool: "find", args: `{"pattern":"b/**/*.go"}`, wantExact: "b/b_test.go\nb/c/d.go"},
		{name: "hidden", tool: "find", args: `{"pattern":"x.go","hidden":true}`, wantExact: ".hidden/x.go"},
		{name: "dirs", tool: "find", args: `{"pattern":"*","type":"dir","path":"b"}`, wantExact: "b/c/"},
		{name: "limit", tool: "find", args: `{"pattern":"*.go","limit":1}`, want: []string{"a.go\n\n[Result limit reached (1)."}},
		{name: "none", tool: "find", args: `{"pattern":"*.rs"}`, wantExact: "No files found"},
	})
}

func TestGlob(t *testing.T) {
	set, env := fixture(t, map[string]string{
		"a.go": "", "src/b.go": "", "src/c/d.go": "", "src/e.txt": "", ".hidden/x.go": "", "ignored/i.go": "", ".gitignore": "ignored/\n",
	})
	runCalls(t, set, env, []call{
		{name: "default dir", tool: "glob", args: `{}`, wantExact: "a.go\nsrc/b.go\nsrc/c/d.go\nsrc/e.txt"},
		{name: "glob with a dir prefix", tool: "glob", args: `{"path":"src/**/*.go"}`, wantExact: "src/b.go\nsrc/c/d.go"},
		{name: "list", tool: "glob", args: `{"path":"a.go; src/*.txt"}`, wantExact: "a.go\nsrc/e.txt"},
		{name: "gitignore off", tool: "glob", args: `{"path":"**/i.go","gitignore":false}`, wantExact: "ignored/i.go"},
		{name: "hidden", tool: "glob", args: `{"path":"*.go","hidden":true}`, want: []string{".hidden/x.go"}},
		{name: "missing", tool: "glob", args: `{"path":"nope/*.go"}`, wantErr: true, wantExact: "Path not found: nope"},
	})
}

func TestTodo(t *testing.T) {
	set, env := fixture(t, nil)
	runCalls(t, set, env, []call{
		{name: "empty view", tool: "todo", args: `{"ops":[{"op":"view"}]}`, wantExact: "Todo list is empty."},
		{name: "init", tool: "todo", args: `{"ops":[{"op":"init","list":[{"phase":"Design","items":["sketch types"]},{"phase":"Implementation","items":["session store","wire RPC bash","print mode","old idea"]}]}]}`,
			want: []string{"Remaining: 5 of 5 tasks (in progress: \"sketch types\")"}},
		{name: "progress", tool: "todo", args: `{"ops":[{"op":"done","task":"sketch types"},{"op":"done","task":"session store"},{"op":"start","task":"wire RPC bash"},{"op":"drop","task":"old idea"}]}`,
			wantExact: "Remaining: 2 of 4 tasks (in progress: \"wire RPC bash\")\nCurrent phase \"Implementation\": 1/3 done\n\n## Design\n- [x] sketch types\n## Implementation\n- [x] session store\n- [/] wire RPC bash\n- [ ] print mode\n- [-] old idea",
			check: func(t *testing.T, _ *Env, res Result) {
				d := res.Details.(TodoDetails)
				if len(d.CompletedTasks) != 2 || d.CompletedTasks[0] != (CompletedTask{"Design", "sketch types"}) {
					t.Fatalf("completed = %+v", d.CompletedTasks)
				}
			}},
		{name: "errors discard the batch", tool: "todo", args: `{"ops":[{"op":"done","task":"print mode"},{"op":"start","task":"ghost"},{"op":"append","phase":"Design","items":["session store"]}]}`,
			wantErr: true, wantExact: `Errors: Task "ghost" not found; Task "session store" already exists`},
		{name: "state unchanged", tool: "todo", args: `{"ops":[{"op":"view"}]}`, want: []string{"- [ ] print mode"}},
		{name: "duplicate init", tool: "todo", args: `{"ops":[{"op":"init","list":[{"phase":"A","items":["x","x"]}]}]}`,
			wantErr: true, wantExact: `Errors: Duplicate task "x" in init list`},
		{name: "rm all", tool: "todo", args: `{"ops":[{"op":"rm"}]}`, wantExact: "Todo list cleared."},
	})
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func TestReadRuleScheme(t *testing.T) {
	env := &Env{Cwd: t.TempDir(), Rule: func(name string) (string, bool) {
		if name == "go-style" {
			return "Run gofmt.", true
		}
		return "", false
	}}
	res, err := Read(env).Run(context.Background(), map[string]any{"path": "rule://go-style"}, nil)
	if err != nil || len(res.Content) != 1 || res.Content[0].Text != "Run gofmt." {
		t.Fatalf("rule://go-style = %+v, %v", res, err)
	}
	if _, err := Read(env).Run(context.Background(), map[string]any{"path": "rule://nope"}, nil); err == nil || err.Error() != "Rule not found: nope" {
		t.Fatalf("missing rule: %v", err)
	}
	if _, err := Read(env).Run(context.Background(), map[string]any{"path": "skill://x"}, nil); err == nil || !strings.Contains(err.Error(), "Supported: artifact://, rule://") {
		t.Fatalf("unknown scheme: %v", err)
	}
}

func TestRunCommand(t *testing.T) {
	env := &Env{Cwd: t.TempDir(), Environ: []string{"PATH=" + os.Getenv("PATH")}}
	r, err := RunCommand(context.Background(), env, BashOptions{NoLogin: true}, "echo hi; exit 3")
	if err != nil || r.Output != "hi\n" || r.ExitCode == nil || *r.ExitCode != 3 || r.Cancelled || r.Truncated {
		t.Fatalf("r = %+v, %v", r, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if r, err = RunCommand(ctx, env, BashOptions{NoLogin: true}, "sleep 30"); err != nil || !r.Cancelled || r.ExitCode != nil {
		t.Fatalf("cancelled r = %+v, %v", r, err)
	}
}
