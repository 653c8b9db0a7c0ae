package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/secrets"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/catalog"
)

// agentFlags are the agent's command-line flags.
type agentFlags struct {
	print         bool
	mode          string
	model         string
	provider      string
	cont          bool
	resume        string
	fork          string
	noSession     bool
	sessionDir    string
	apiKey        string
	thinking      string
	printThoughts bool
	systemPrompt  string
	appendSystem  string
	tools         string
	noTools       bool
	noRules       bool
	noUI          bool
	listModels    string // "" = off; listAll or a filter
}

// listAll is --list-models without a filter.
const listAll = "\x00all"

// agentModes are the values --mode accepts, each with its help text.
var agentModes = []struct{ name, help string }{
	{"text", "the final answer"},
	{"json", "one JSON event per line"},
	{"rpc", "JSON commands on stdin, responses and events on stdout"},
}

// modeUsage is the help text of --mode: every mode with what it prints.
func modeUsage() string {
	parts := make([]string, len(agentModes))
	for i, m := range agentModes {
		parts[i] = m.name + " (" + m.help + ")"
	}
	return "output mode: " + strings.Join(parts, ", ")
}

// validMode reports whether --mode accepts m.
func validMode(m string) bool {
	for _, am := range agentModes {
		if am.name == m {
			return true
		}
	}
	return false
}

// optionalFilter is the value of --list-models: a filter that may be left
// out. It reports the type "bool" with the no-value default "true" so the
// help shows the flag as `--list-models [filter]` instead of a default
// value; a bare --list-models (and --list-models=true) lists everything.
type optionalFilter struct{ v *string }

func (o optionalFilter) String() string {
	if o.v == nil || *o.v == listAll {
		return ""
	}
	return *o.v
}

func (o optionalFilter) Set(s string) error {
	if s == "true" {
		s = listAll
	}
	*o.v = s
	return nil
}

func (optionalFilter) Type() string { return "bool" }

// addAgentFlags registers the agent flags on the root command.
func addAgentFlags(c *cobra.Command, f *agentFlags) {
	fs := c.Flags()
	fs.BoolVarP(&f.print, "print", "p", false, "print mode: run the prompts, print the final answer and exit")
	fs.StringVar(&f.mode, "mode", "", modeUsage())
	fs.StringVar(&f.model, "model", "", "model as provider/id[:thinking level] or a bare id")
	fs.StringVar(&f.provider, "provider", "", "provider of --model (legacy)")
	fs.BoolVarP(&f.cont, "continue", "c", false, "continue the most recent session of this directory")
	fs.StringVarP(&f.resume, "resume", "r", "", "resume a session by id prefix or file path")
	fs.StringVar(&f.fork, "fork", "", "fork a session (id prefix or path) into this directory and continue it")
	fs.BoolVar(&f.noSession, "no-session", false, "keep the session in memory only")
	fs.StringVar(&f.sessionDir, "session-dir", "", "directory holding the session files")
	fs.StringVar(&f.apiKey, "api-key", "", "API key for the selected provider")
	fs.StringVar(&f.thinking, "thinking", "", "thinking level: off, minimal, low, medium, high, xhigh")
	fs.BoolVar(&f.printThoughts, "print-thoughts", false, "print mode also prints the model's thinking")
	fs.StringVar(&f.systemPrompt, "system-prompt", "", "system prompt text or file")
	fs.StringVar(&f.appendSystem, "append-system-prompt", "", "text or file appended to the system prompt")
	fs.StringVar(&f.tools, "tools", "", "comma-separated allowlist of built-in tools")
	fs.BoolVar(&f.noTools, "no-tools", false, "disable every built-in tool")
	fs.BoolVar(&f.noRules, "no-rules", false, "load no rules (.omp/rules, ~/.omp/agent/rules, .cursor/rules)")
	fs.BoolVar(&f.noUI, "no-ui", false, "with --mode rpc: no extension UI requests (the RPC mode sends none anyway)")
	fs.Var(optionalFilter{&f.listModels}, "list-models", "print the models and exit; `[filter]` keeps those whose provider/id contains it")
	fs.Lookup("list-models").NoOptDefVal = "true"
}

var thinkingLevels = agent.ThinkingLevels

// errNoPrompt is the empty-prompt error of print mode.
var errNoPrompt = errors.New("No prompt provided")

// agentGCPercent is the agent process's GC target. Its heap is mostly the
// session it loads and the context it rebuilds; at Go's default (100) the
// collector takes about a third of loading a long session (BenchmarkOpen10k
// 42–52 ms; 34 ms at 400). agentMemoryLimit keeps a long interactive
// session's heap bounded all the same.
const (
	agentGCPercent   = 400
	agentMemoryLimit = 1 << 30
)

// tuneAgentGC applies agentGCPercent unless GOGC is set by the user.
func tuneAgentGC(gogc string) {
	if gogc != "" {
		return
	}
	debug.SetGCPercent(agentGCPercent)
	if debug.SetMemoryLimit(-1) == math.MaxInt64 { // no GOMEMLIMIT given
		debug.SetMemoryLimit(agentMemoryLimit)
	}
}

// runAgent is `omp [flags] [messages...]`: print, json and rpc modes.
func (a *app) runAgent(ctx context.Context, f *agentFlags, messages []string) error {
	stdinTTY := isTerminal(a.stdin)
	interactive := f.mode == "" && !f.print && stdinTTY
	env, dirs, err := a.setup()
	if err != nil {
		return err
	}
	tuneAgentGC(env.Get("GOGC"))
	cwd := a.cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return err
		}
	}
	if f.listModels != "" {
		filter := f.listModels
		if filter == listAll && len(messages) > 0 {
			filter = messages[0] // `--list-models <filter>`: pflag leaves it positional
		}
		return a.listModels(dirs, filter)
	}
	if f.mode != "" && !validMode(f.mode) {
		return fmt.Errorf("unsupported --mode %q (text, json or rpc)", f.mode)
	}
	rpc := f.mode == "rpc"
	if f.noUI && !rpc {
		return &exitError{code: 1, msg: "Error: --no-ui requires --mode rpc"}
	}
	if f.thinking != "" && !slices.Contains(thinkingLevels, f.thinking) {
		return fmt.Errorf("invalid --thinking %q (want one of %s)", f.thinking, strings.Join(thinkingLevels, ", "))
	}
	if rpc {
		// RPC mode reads commands from stdin, not files or prompts.
		for _, m := range messages {
			if strings.HasPrefix(m, "@") {
				return &exitError{code: 2, msg: "@file arguments are not supported in RPC mode"}
			}
		}
	}
	messages, attachments, err := fileArgs(messages, cwd)
	if err != nil {
		return err
	}
	var prompts []string
	if !rpc {
		if prompts, err = a.prompts(messages, stdinTTY); err != nil && !(interactive && errors.Is(err, errNoPrompt)) {
			return err
		}
	}
	if interactive && len(attachments) > 0 {
		return errors.New("@file attachments are not supported in interactive mode yet: use -p")
	}
	rt, err := a.newAgentRuntime(ctx, f, env, dirs, cwd)
	if err != nil {
		return err
	}
	defer rt.close()
	if rpc {
		return a.runRPC(ctx, rt)
	}
	if interactive {
		return a.runInteractive(ctx, rt, f, prompts)
	}
	ag, sf := rt.ag, rt.ag.Session
	out := bufio.NewWriter(a.stdout)
	defer out.Flush()
	if f.mode == "json" {
		out.Write(sf.HeaderJSON())
		out.WriteByte('\n')
		var buf []byte
		ag.Emit = func(e *agent.Event) {
			buf = e.AppendJSON(buf[:0], true)
			buf = append(buf, '\n')
			out.Write(buf)
			if e.Type != agent.EventMessageUpdate {
				out.Flush()
			}
		}
	} else {
		fmt.Fprintln(a.stderr, "Working...")
	}
	var final *llm.Message
	for i, p := range prompts {
		content := []llm.Content{llm.Text(p)}
		if i == 0 && len(attachments) > 0 {
			content = attach(p, attachments)
		}
		if final, err = ag.PromptContent(ctx, content); err != nil {
			return err
		}
		if final.StopReason == llm.StopError || final.StopReason == llm.StopAborted || ctx.Err() != nil {
			break
		}
	}
	if err := sf.Persist(); err != nil {
		return err
	}
	session.WriteBreadcrumb(dirs.AgentDir, rt.terminal, rt.cwd, sf.Path())
	if ctx.Err() != nil {
		out.Flush()
		return &exitError{code: 130}
	}
	if final.StopReason == llm.StopError || final.StopReason == llm.StopAborted {
		out.Flush()
		msg := final.ErrorMessage
		if msg == "" {
			msg = "Request " + string(final.StopReason)
		}
		if final.ErrorStatus != 0 { // an upstream HTTP error: name who answered what
			msg = fmt.Sprintf("%s HTTP %d: %s", final.Provider, final.ErrorStatus, msg)
		}
		return &exitError{code: 1, msg: msg}
	}
	if f.mode != "json" {
		if f.printThoughts {
			for _, c := range final.Content {
				if c.Type == llm.ContentThinking {
					out.WriteString(ag.Secrets.Restore(c.Thinking) + "\n")
				}
			}
		}
		var texts []string
		for _, c := range final.Content {
			if c.Type == llm.ContentText {
				texts = append(texts, ag.Secrets.Restore(c.Text))
			}
		}
		out.WriteString(strings.Join(texts, "\n") + "\n")
	}
	return nil
}

// agentRuntime is an agent ready to run with what the modes need around
// it: the catalogue and key ladder (model switches), the tool environment
// (user bash) and the broker connection.
type agentRuntime struct {
	ag       *agent.Agent
	cat      *llm.Catalog
	keys     *keyLadder
	env      *config.Env
	dirs     config.Dirs
	settings *config.Settings
	cwd      string
	terminal string
	tenv     *tools.Env
	bashOpt  tools.BashOptions
	broker   *agentBroker
}

// provider returns the upstream of model m through the session's
// obfuscator (the first model and every switch): requests are rewritten
// with secrets.enabled, observed otherwise.
func (rt *agentRuntime) provider(m llm.Model) (llm.Provider, error) {
	p, err := newProvider(m, config.ProviderURL(rt.env, rt.settings, m.Provider, "baseUrl"))
	if err != nil {
		return p, err
	}
	return secrets.Wrap(p, rt.ag.Secrets), nil
}

func (rt *agentRuntime) close() {
	if rt.broker != nil {
		rt.broker.stop()
	}
}

// newAgentRuntime resolves the models, the credential, the session, the
// model and the tools into an Agent.
func (a *app) newAgentRuntime(ctx context.Context, f *agentFlags, env *config.Env, dirs config.Dirs, cwd string) (*agentRuntime, error) {
	// Models: the bundled catalogue plus models.yml; an invalid file
	// leaves the catalogue working and says why.
	cat := llm.Builtin()
	models, err := catalog.Load(filepath.Join(dirs.AgentDir, "models.yml"))
	if err != nil {
		fmt.Fprintf(a.stderr, "Warning: %v\n", err)
		models = &catalog.File{}
	} else {
		refuseUntrustedKeyCommands(models, dirs.AgentDir, a.stderr)
		cat = models.Apply(cat)
	}
	resolver := config.NewResolver(env)
	resolver.Logger = a.warnLogger()
	settings, err := config.LoadSettings(dirs.AgentDir, a.warnLogger())
	if err != nil {
		return nil, err
	}
	broker, err := connectBroker(ctx, env, dirs, settings, resolver, a.stderr)
	if err == nil && broker == nil {
		broker, err = a.openAgentVault(ctx, env, dirs, settings, a.stderr)
	}
	if err != nil {
		return nil, err
	}
	built := false
	defer func() {
		if !built && broker != nil {
			broker.stop()
		}
	}()
	keys := &keyLadder{flag: f.apiKey, models: models, env: env, resolver: resolver, broker: broker}

	// Session.
	terminal := session.TerminalID(env.Get)
	sf, err := a.openSession(f, dirs, cwd, terminal)
	if err != nil {
		return nil, err
	}
	if sf.Path() != "" {
		sf.SetBlobsDir(filepath.Join(dirs.AgentDir, "blobs"))
	}
	// A resumed session from another directory works where it was started,
	// when that directory still exists.
	if h := sf.Header().Cwd; h != "" && h != cwd {
		if st, err := os.Stat(h); err == nil && st.IsDir() {
			cwd = h
		}
	}
	replay := sf.BuildContext()
	keys.session = sf.Header().ID

	sel, level := f.model, f.thinking
	if f.provider != "" && sel != "" && !strings.Contains(sel, "/") {
		sel = f.provider + "/" + sel
	}
	if s, l, ok := strings.Cut(sel, ":"); ok && slices.Contains(thinkingLevels, l) {
		sel = s
		if level == "" {
			level = l
		}
	}
	model, err := pickModel(ctx, cat, sel, replay.Model, keys)
	if err != nil {
		return nil, err
	}
	if level == "" {
		level = replay.ThinkingLevel
	}
	if level == "" {
		level = "medium" // the reference's defaultThinkingLevel
	}
	cred, err := keys.credential(ctx, model)
	if err != nil {
		return nil, err
	}
	if replay.Model != model.Key() {
		if _, err := sf.AppendModelChange(model.Provider, model.ID, ""); err != nil {
			return nil, err
		}
	}
	if replay.ThinkingLevel != level {
		if _, err := sf.AppendThinkingLevel(level); err != nil {
			return nil, err
		}
	}
	prov, err := newProvider(model, config.ProviderURL(env, settings, model.Provider, "baseUrl"))
	if err != nil {
		return nil, err
	}

	tenv := &tools.Env{Cwd: cwd, Home: dirs.Home, Environ: a.environ}
	if d := sf.ArtifactsDir(); d != "" {
		tenv.Artifacts = &tools.Artifacts{Dir: d}
	}
	enabled := func(string) bool { return !f.noTools }
	if f.tools != "" && !f.noTools {
		allow := strings.Split(f.tools, ",")
		enabled = func(n string) bool { return slices.Contains(allow, n) }
	}
	bashOpt := tools.BashOptions{
		NoLogin: env.Get("PI_BASH_NO_LOGIN") != "" || env.Get("CLAUDE_BASH_NO_LOGIN") != "",
		NoCI:    env.Get("PI_BASH_NO_CI") != "" || env.Get("CLAUDE_BASH_NO_CI") != "",
		Prefix:  cmp.Or(env.Get("PI_SHELL_PREFIX"), env.Get("CLAUDE_CODE_SHELL_PREFIX")),
	}
	todos := &tools.TodoList{}
	todos.Set(agent.RestoreTodos(sf))
	set := tools.Builtin(tenv, bashOpt, todos, enabled)
	obf, err := a.loadSecrets(dirs, cwd, env, settings)
	if err != nil {
		return nil, err
	}
	system, err := a.systemPrompt(ctx, f, env, dirs, cwd, set, tenv, settings.SecretsEnabled)
	if err != nil {
		return nil, err
	}
	// With secrets.enabled off a key from earlier sessions still restores
	// the placeholders the history shows the model; requests are observed,
	// not rewritten.
	obf.SetPassive(!settings.SecretsEnabled)
	prov = secrets.Wrap(prov, obf)
	ag := &agent.Agent{Session: sf, Provider: prov, Model: model, Credential: cred, Tools: set,
		SystemPrompt: system, ThinkingLevel: level, Retry: retrySettings(settings), Compaction: compactionSettings(settings),
		Secrets: obf}
	ag.Compactor, ag.Todos = ag.BuiltinCompactor(), todos
	ag.SetAutoCompaction(ag.Compaction.Enabled)
	if broker != nil {
		// The credential is picked per turn: OAuth access tokens rotate
		// during long runs (the snapshot's current one, refreshed through the
		// broker near expiry; without a broker the local vault's, refreshed
		// by this process while it holds the vault), and after a usage limit the picker moves the
		// session to a free account, blocking the limited one for the whole
		// fleet; an account-policy denial does
		// the same for 60 s (for the denied model only when it names it).
		ag.Credentials = func(ctx context.Context) (llm.Credential, error) { return keys.credential(ctx, ag.CurrentModel()) }
		ag.OnUsageLimit = keys.usageLimit
		ag.OnPolicyDenied = keys.policyDenied
		if cred.Kind == llm.CredentialOAuth {
			// Any other 401/403 forces a refresh through the broker.
			ag.RefreshCredential = func(ctx context.Context) (llm.Credential, error) { return keys.refresh(ctx, ag.CurrentModel()) }
		}
	}
	if broker != nil {
		// In broker mode every settled turn's burn is reported, whatever the
		// mode.
		ag.Subscribe(func(e *agent.Event) {
			if e.Type == agent.EventTurnEnd {
				broker.observeTurn(e.Message)
			}
		})
	}
	built = true
	return &agentRuntime{ag: ag, cat: cat, keys: keys, env: env, dirs: dirs, settings: settings, cwd: cwd,
		terminal: terminal, tenv: tenv, bashOpt: bashOpt, broker: broker}, nil
}

// listModels prints the catalogue with models.yml applied, one model per
// line: provider/id, api, context window and output limit.
func (a *app) listModels(dirs config.Dirs, filter string) error {
	cat := llm.Builtin()
	if models, err := catalog.Load(filepath.Join(dirs.AgentDir, "models.yml")); err != nil {
		fmt.Fprintf(a.stderr, "Warning: %v\n", err)
	} else {
		cat = models.Apply(cat)
	}
	w := bufio.NewWriter(a.stdout)
	defer w.Flush()
	for _, m := range cat.Models() {
		if filter != listAll && !strings.Contains(strings.ToLower(m.Key()), strings.ToLower(filter)) {
			continue
		}
		fmt.Fprintf(w, "%-50s %-24s %9d %7d\n", m.Key(), m.API, m.ContextWindow, m.MaxTokens)
	}
	return nil
}

// attachment is an @path argument: a text file's content or an image.
type attachment struct {
	path  string
	text  string
	image *llm.Content
}

// fileArgs splits the @path arguments off messages; a missing file
// is a startup error.
func fileArgs(args []string, cwd string) (rest []string, files []attachment, err error) {
	for _, a := range args {
		p, ok := strings.CutPrefix(a, "@")
		if !ok || p == "" {
			rest = append(rest, a)
			continue
		}
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cwd, p)
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return nil, nil, fmt.Errorf("File not found: %s", p)
		}
		switch mime := http.DetectContentType(data); mime {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
			img := llm.Image(mime, base64.StdEncoding.EncodeToString(data))
			files = append(files, attachment{path: p, image: &img})
		default:
			files = append(files, attachment{path: p, text: string(data)})
		}
	}
	return rest, files, nil
}

// attach builds the first user message: text files as <file> blocks
// before the prompt text, images as image blocks after it.
func attach(prompt string, files []attachment) []llm.Content {
	var b strings.Builder
	var images []llm.Content
	for _, f := range files {
		if f.image != nil {
			images = append(images, *f.image)
			continue
		}
		b.WriteString("<file path=\"" + f.path + "\">\n" + strings.TrimSuffix(f.text, "\n") + "\n</file>\n")
	}
	text := b.String() + prompt
	return append([]llm.Content{llm.Text(text)}, images...)
}

// prompts returns the successive prompts: the positional messages, with
// piped stdin prepended to the first.
func (a *app) prompts(messages []string, stdinTTY bool) ([]string, error) {
	prompts := slices.Clone(messages)
	if !stdinTTY && a.stdin != nil {
		data, err := io.ReadAll(a.stdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		if in := strings.TrimRight(string(data), "\n"); in != "" {
			if len(prompts) == 0 {
				prompts = []string{in}
			} else {
				prompts[0] = in + "\n\n" + prompts[0]
			}
		}
	}
	if len(prompts) == 0 || strings.TrimSpace(strings.Join(prompts, "")) == "" {
		return nil, errNoPrompt
	}
	return prompts, nil
}

// isTerminal reports whether r is a terminal (/dev/null is not).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
