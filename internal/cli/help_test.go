package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// helpLine returns the line of help that starts (after indentation) with
// word followed by spaces and a description, or "".
func helpLine(help, word string) string {
	re := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(word) + `\s+\S.*$`)
	return re.FindString(help)
}

// TestHelpListsEveryModeAndAction runs the help of omp and of each command
// group and checks that every mode, thinking level, action and subcommand
// is listed with a description, so a new one without help text fails here.
func TestHelpListsEveryModeAndAction(t *testing.T) {
	c := newCLI(t)

	root := c.ok("", "--help")
	var modeLine string
	for _, l := range strings.Split(root, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--mode ") {
			modeLine = l
		}
	}
	if modeLine == "" {
		t.Fatalf("omp --help has no --mode line:\n%s", root)
	}
	for _, m := range agentModes {
		if m.help == "" || !strings.Contains(modeLine, m.name+" ("+m.help+")") {
			t.Errorf("--mode help does not describe %q: %s", m.name, modeLine)
		}
	}
	for _, lvl := range thinkingLevels {
		if l := helpLine(root, "--thinking string"); !strings.Contains(l, lvl) {
			t.Errorf("--thinking help does not list %q: %s", lvl, l)
		}
	}
	if l := helpLine(root, "--list-models [filter]"); l == "" || strings.Contains(l, "[=") {
		t.Errorf("--list-models help: want `--list-models [filter]` without a default, got:\n%s", root)
	}

	usage := c.ok("", "usage", "--help")
	for _, a := range usageActions {
		if a.help == "" || !strings.Contains(helpLine(usage, a.name), a.help) {
			t.Errorf("omp usage --help does not describe the action %q:\n%s", a.name, usage)
		}
	}
	if !strings.Contains(usage, "omp usage ["+strings.Join(usageActionNames(), "|")+"]") {
		t.Errorf("omp usage --help: the usage line does not name every action:\n%s", usage)
	}

	// Every command group lists each of its subcommands with its summary.
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		subs := cmd.Commands()
		if len(subs) == 0 {
			return
		}
		args := append(strings.Fields(cmd.CommandPath())[1:], "--help")
		help := c.ok("", args...)
		for _, sub := range subs {
			if sub.Hidden {
				t.Errorf("%s is hidden from %s --help", sub.CommandPath(), cmd.CommandPath())
				continue
			}
			if sub.Short == "" || !strings.Contains(helpLine(help, sub.Name()), sub.Short) {
				t.Errorf("%s --help does not list %q with its summary:\n%s", cmd.CommandPath(), sub.Name(), help)
			}
			walk(sub)
		}
	}
	walk(newRootCmd(&app{}))
}

func TestListModelsFlagTakesAnOptionalFilter(t *testing.T) {
	var f agentFlags
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--list-models"}, listAll},
		{[]string{"--list-models=sonnet"}, "sonnet"},
		{nil, ""},
	} {
		f = agentFlags{}
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		addAgentFlags(cmd, &f)
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if f.listModels != tc.want {
			t.Errorf("%v: listModels = %q, want %q", tc.args, f.listModels, tc.want)
		}
	}
}
