package prompt

import (
	"cmp"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Fact is one "- <label>: <value>" line of the <workstation> block.
type Fact struct{ Label, Value string }

// Workstation lists the facts of this machine that help a model choose
// commands: the OS, the shell, the terminal and the desktop, from the
// environment (getenv may be nil).
func Workstation(getenv func(string) string) []Fact {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	facts := []Fact{{"OS", osName()}, {"Architecture", runtime.GOARCH}}
	if sh := getenv("SHELL"); sh != "" {
		facts = append(facts, Fact{"Shell", filepath.Base(sh)})
	}
	term := getenv("TERM_PROGRAM")
	if v := getenv("TERM_PROGRAM_VERSION"); term != "" && v != "" {
		term += " " + v
	}
	if term = cmp.Or(term, getenv("TERMINAL_EMULATOR")); term != "" {
		facts = append(facts, Fact{"Terminal", term})
	}
	desktop := cmp.Or(getenv("XDG_CURRENT_DESKTOP"), getenv("DESKTOP_SESSION"))
	if desktop == "" && getenv("KDE_FULL_SESSION") == "true" {
		desktop = "KDE"
	}
	if desktop != "" {
		facts = append(facts, Fact{"Desktop", desktop})
	}
	return facts
}

// osName is the OS with its distribution name where /etc/os-release has
// one.
func osName() string {
	name := runtime.GOOS
	if runtime.GOOS == "linux" {
		if b, err := os.ReadFile("/etc/os-release"); err == nil {
			for l := range strings.Lines(string(b)) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "PRETTY_NAME="); ok {
					return "linux (" + strings.Trim(v, `"'`) + ")"
				}
			}
		}
	}
	return name
}
