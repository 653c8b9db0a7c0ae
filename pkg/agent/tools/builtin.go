package tools

// Builtin returns the v1 default tool set in its advertised order:
// read, write, edit, bash, grep, find, glob, todo. enabled (may be nil) filters
// by name (--tools, <tool>.enabled: false).
func Builtin(env *Env, bash BashOptions, todo *TodoList, enabled func(name string) bool) *Set {
	storage := "session"
	if env.Artifacts == nil {
		storage = "memory"
	}
	all := []*Tool{Read(env), Write(env), Edit(env), Bash(env, bash), Grep(env), Find(env), Glob(env), Todo(todo, storage)}
	var out []*Tool
	for _, t := range all {
		if enabled == nil || enabled(t.Name) {
			out = append(out, t)
		}
	}
	return NewSet(out...)
}
