package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/oauth"
)

const (
	viaUsage    = "Usage: omp auth-broker login <provider> --via=user@host (provider required for remote login)"
	pastePrompt = "Paste the authorization code (or full redirect URL):"
)

func newLoginCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "login [<provider>]",
		Short: "Log in to a provider and store the credential in the broker's vault",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			provider := f.provider
			if len(args) == 1 {
				provider = args[0]
			}
			return a.runLogin(cmd.Context(), provider, f.via, f.dryRun)
		},
	}
	cmd.Flags().StringVar(&f.provider, "provider", "", "provider id")
	cmd.Flags().StringVar(&f.via, "via", "", "run the login on user@host over ssh, forwarding the callback port")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "with --via: print the ssh command instead of running it")
	return cmd
}

// runLogin implements `auth-broker login`.
func (a *app) runLogin(ctx context.Context, provider, via string, dryRun bool) error {
	reg, err := a.oauthRegistry()
	if err != nil {
		return err
	}
	providers := loginProviders(reg)
	if provider == "" && via != "" {
		return errors.New(viaUsage)
	}
	if provider, err = a.chooseProvider(providers, provider); err != nil {
		return err
	}
	if !slices.ContainsFunc(providers, func(p providerName) bool { return p.ID == provider }) {
		ids := make([]string, len(providers))
		for i, p := range providers {
			ids[i] = p.ID
		}
		slices.Sort(ids)
		return fmt.Errorf("Unknown OAuth provider '%s'. Known: %s", provider, strings.Join(ids, ", "))
	}
	if via != "" {
		return a.runRemoteLogin(ctx, reg, provider, via, dryRun)
	}
	_, sink, err := a.loginAndStore(ctx, reg, provider)
	switch {
	case errors.Is(err, oauth.ErrNoKeyEntered): // Ollama's local no-auth mode
		fmt.Fprintln(a.stdout, "No API key entered; nothing stored.")
		return nil
	case err != nil:
		return err
	}
	if sink.broker {
		fmt.Fprintf(a.stdout, "\nCredentials uploaded to %s\n", sink.dest)
	} else {
		fmt.Fprintf(a.stdout, "\nCredentials saved to %s\n", sink.dest)
	}
	return nil
}

// chooseProvider returns provider, or the one picked from providers when it
// is "".
func (a *app) chooseProvider(providers []providerName, provider string) (string, error) {
	if provider != "" {
		return provider, nil
	}
	if len(providers) == 0 {
		return "", errors.New("No OAuth providers registered")
	}
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.Name
	}
	name, err := pick(a.in(), a.stdout, "Select a provider:", names)
	if err != nil {
		return "", err
	}
	return providers[slices.Index(names, name)].ID, nil
}

// loginAndStore runs provider's login flow (API key or OAuth) and stores
// the credential on the configured broker, else in the local vault (which a
// broker on this host serves). oauth.ErrNoKeyEntered means an empty key was
// accepted and nothing stored.
func (a *app) loginAndStore(ctx context.Context, reg *oauth.Registry, provider string) (vault.Credential, *loginSink, error) {
	// Where the credential goes is settled before the user signs in, so a
	// vault that cannot be opened does not cost them a login.
	save, err := a.loginSink(ctx)
	if err != nil {
		return vault.Credential{}, nil, err
	}
	defer save.close()

	var cred vault.Credential
	if kl, ok := reg.KeyLogin(provider); ok {
		key, err := a.keyLogin(ctx, kl)
		if err != nil {
			return vault.Credential{}, nil, err
		}
		cred = vault.Credential{Type: vault.TypeAPIKey, Key: key, Source: vault.SourceLogin} // as 18.1.21 stores a login key
	} else {
		if cred, err = a.oauthLogin(ctx, reg, provider); err != nil {
			return vault.Credential{}, nil, err
		}
	}
	if ctx.Err() != nil { // Ctrl-C after the last request: store nothing
		return vault.Credential{}, nil, oauth.ErrLoginCancelled
	}
	return cred, save, save.store(ctx, provider, cred)
}

// oauthLogin runs the authorization-code flow with the CLI's surroundings:
// the URL on stdout, the browser when one is available, pasted input from
// stdin, progress lines on stdout.
func (a *app) oauthLogin(ctx context.Context, reg *oauth.Registry, provider string) (vault.Credential, error) {
	env, _, err := a.setup()
	if err != nil {
		return vault.Credential{}, err
	}
	urls, err := a.providerURLs()
	if err != nil {
		return vault.Credential{}, err
	}
	redirect := urls(provider, config.RedirectURI)
	// A progress line after the paste prompt starts on a line of its own.
	prompted := false
	o := oauth.LoginOptions{
		RedirectURL: redirect,
		// The URL, instructions and progress lines can come from the
		// provider (a device-code answer): printed through clitext.
		Auth: func(u, instructions string) {
			fmt.Fprintf(a.stdout, "\nOpen this URL in your browser:\n%s\n", clitext.SafeLine(u))
			if instructions != "" {
				fmt.Fprintln(a.stdout, clitext.Safe(instructions))
			}
			fmt.Fprintln(a.stdout)
			fmt.Fprintf(a.stdout, "%s ", pastePrompt)
			prompted = true
		},
		HTTPClient: a.httpClient,
		Browser:    a.browser(),
		Progress: func(msg string) {
			if prompted {
				fmt.Fprintln(a.stdout)
				prompted = false
			}
			fmt.Fprintln(a.stdout, clitext.Safe(msg))
		},
		Paste:         a.lines(ctx),
		GoogleProject: firstSet(env.Get("GOOGLE_CLOUD_PROJECT"), env.Get("GOOGLE_CLOUD_PROJECT_ID")),
	}
	if a.loginHook != nil {
		a.loginHook(&o)
	}
	cred, err := reg.Login(ctx, provider, o)
	if prompted && err != nil {
		fmt.Fprintln(a.stdout) // the error starts on a line of its own
	}
	return cred, err
}

// keyLogin runs an API-key login flow.
func (a *app) keyLogin(ctx context.Context, kl oauth.KeyLogin) (string, error) {
	if kl.AuthURL != "" {
		fmt.Fprintf(a.stdout, "\nOpen this URL in your browser:\n%s\n%s\n\n", kl.AuthURL, kl.Instructions)
	}
	prompt := kl.Prompt
	if kl.Placeholder != "" {
		prompt += " (" + kl.Placeholder + ")"
	}
	fmt.Fprintf(a.stdout, "%s: ", prompt)
	var line string
	select {
	case <-ctx.Done():
		return "", oauth.ErrLoginCancelled
	case l, ok := <-a.lines(ctx):
		if !ok {
			return "", oauth.ErrLoginCancelled
		}
		line = l
	}
	fmt.Fprintln(a.stdout)
	key, err := kl.Normalize(line)
	if err != nil {
		return "", err
	}
	if !kl.Validates() {
		return key, nil
	}
	if kl.Optional {
		fmt.Fprintln(a.stdout, "Validating API key (optional)...")
	} else {
		fmt.Fprintln(a.stdout, "Validating API key...")
	}
	if err := kl.Validate(ctx, a.httpClient, key); err != nil {
		if ctx.Err() != nil {
			return "", oauth.ErrLoginCancelled
		}
		return "", err
	}
	return key, nil
}

// loginSink is where a login's credential is stored: the configured broker
// (POST /v1/credential) off the broker host, else the local sealed vault,
// which a running broker on this host picks up within a second.
type loginSink struct {
	store  func(ctx context.Context, provider string, cred vault.Credential) error
	close  func()
	broker bool   // the credential goes to a broker
	dest   string // the broker URL or the vault path
}

func (a *app) loginSink(ctx context.Context) (*loginSink, error) {
	bc, err := a.brokerConfig(ctx)
	if err != nil {
		return nil, err
	}
	if bc != nil {
		client := brokerclient.New(bc.URL, bc.Token, a.httpClient)
		if _, err := client.Healthz(ctx); err != nil {
			return nil, fmt.Errorf("auth broker %s is not reachable, so the login could not be stored: %w", bc.URL, err)
		}
		return &loginSink{
			store: func(ctx context.Context, provider string, cred vault.Credential) error {
				if _, err := client.Upload(ctx, provider, cred); err != nil {
					return fmt.Errorf("upload to %s: %w", bc.URL, err)
				}
				return nil
			},
			close:  func() {},
			broker: true, dest: bc.URL,
		}, nil
	}
	st, path, err := a.openLocalVault(ctx)
	if err != nil {
		return nil, err
	}
	return &loginSink{
		store: func(ctx context.Context, provider string, cred vault.Credential) error {
			var err error
			if cred.IsOAuth() {
				_, err = st.Upsert(ctx, provider, cred) // OAuth login: upsert by identity
			} else {
				_, err = st.ReplaceAll(ctx, provider, []vault.Credential{cred}) // API-key login: replace-all
			}
			return err
		},
		close: func() { st.Close() },
		dest:  path,
	}, nil
}

// runRemoteLogin runs the login on the broker host over ssh, forwarding the
// provider's callback port so the local browser reaches it.
func (a *app) runRemoteLogin(ctx context.Context, reg *oauth.Registry, provider, via string, dryRun bool) error {
	port := 0
	if p, ok := reg.Get(provider); ok {
		port = p.CallbackPort
	}
	if port == 0 { // API-key and manual-only flows have no callback port to forward
		return fmt.Errorf("No known OAuth callback port for '%s'. Use device-code flow on the broker host directly.", provider)
	}
	fwd := strconv.Itoa(port) + ":127.0.0.1:" + strconv.Itoa(port)
	args := []string{"-L", fwd, "-o", "ExitOnForwardFailure=yes", via, "omp auth-broker login " + provider}
	if dryRun {
		quoted := make([]string, len(args))
		for i, s := range args {
			if strings.Contains(s, " ") {
				s = "'" + s + "'"
			}
			quoted[i] = s
		}
		fmt.Fprintf(a.stdout, "ssh %s\n", strings.Join(quoted, " "))
		return nil
	}
	env, _, err := a.setup()
	if err != nil {
		return err
	}
	ssh := lookPath("ssh", env.Get("PATH"))
	if ssh == "" {
		return errors.New("ssh binary not found in PATH")
	}
	cmd := exec.CommandContext(ctx, ssh, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	cmd.Env = a.environ
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil { // Ctrl-C: ssh was stopped with us
			return oauth.ErrLoginCancelled
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("ssh exited with code %d", ee.ExitCode())
		}
		return fmt.Errorf("ssh: %w", err)
	}
	return nil
}

// oauthRegistry is the provider registry with this invocation's endpoint
// and client overrides (OMP_PROVIDER_<ID>_*, providers.<id>.* in
// config.yml, GITLAB_CLIENT_ID).
func (a *app) oauthRegistry() (*oauth.Registry, error) {
	if _, _, err := a.setup(); err != nil {
		return nil, err
	}
	urls, err := a.providerURLs()
	if err != nil {
		return nil, err
	}
	return oauth.NewRegistry(urls), nil
}

// providerURLs resolves per-provider endpoint overrides.
func (a *app) providerURLs() (func(provider, kind string) string, error) {
	env, dirs, err := a.setup()
	if err != nil {
		return nil, err
	}
	settings, err := config.LoadSettings(dirs.AgentDir, a.warnLogger())
	if err != nil {
		return nil, err
	}
	return config.URLs{Env: env, Settings: settings}.URL, nil
}

// browser returns how to open a URL here: BROWSER (a ':'-separated list of
// commands, "%s" replaced by the URL or the URL appended), else xdg-open /
// open when a display is available; nil on a headless host (the URL is
// printed and pasted input is accepted anyway).
func (a *app) browser() func(string) error {
	if a.openURL != nil {
		return a.openURL
	}
	env, _, err := a.setup()
	if err != nil {
		return nil
	}
	path := env.Get("PATH")
	var cmds [][]string
	if b := strings.TrimSpace(env.Get("BROWSER")); b != "" {
		for _, c := range strings.Split(b, ":") {
			if f := strings.Fields(c); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
	} else if runtime.GOOS == "darwin" {
		cmds = [][]string{{"open"}}
	} else if env.Get("DISPLAY") != "" || env.Get("WAYLAND_DISPLAY") != "" {
		cmds = [][]string{{"xdg-open"}}
	}
	if len(cmds) == 0 {
		return nil
	}
	return func(u string) error {
		var last error
		for _, c := range cmds {
			bin := lookPath(c[0], path)
			if bin == "" {
				last = fmt.Errorf("%s not found", c[0])
				continue
			}
			args, replaced := make([]string, 0, len(c)), false
			for _, s := range c[1:] {
				if strings.Contains(s, "%s") {
					s, replaced = strings.ReplaceAll(s, "%s", u), true
				}
				args = append(args, s)
			}
			if !replaced {
				args = append(args, u)
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = a.environ
			if err := cmd.Start(); err != nil {
				last = err
				continue
			}
			go func() { _ = cmd.Wait() }() // reap; the browser outlives nothing of ours
			return nil
		}
		return last
	}
}

// in is the command's stdin behind one buffered reader shared by the
// picker and the paste reader, so neither loses what the other read ahead.
func (a *app) in() *bufio.Reader {
	a.inOnce.Do(func() { a.inBuf = bufio.NewReader(a.stdin) })
	return a.inBuf
}

// lines delivers stdin lines, trimmed (one reader goroutine per app,
// started on first use); the channel closes at end of input.
func (a *app) lines(ctx context.Context) <-chan string {
	a.linesOnce.Do(func() {
		ch := make(chan string)
		a.linesCh = ch
		r := a.in()
		go func() {
			defer close(ch)
			for {
				line, err := r.ReadString('\n')
				if err != nil && line == "" {
					return
				}
				select {
				case ch <- strings.TrimSpace(line):
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	})
	return a.linesCh
}

// lookPath finds an executable in the PATH list path (the invocation's
// environment, not necessarily the process's).
func lookPath(name, path string) string {
	if strings.ContainsRune(name, os.PathSeparator) {
		if isExecutable(name) {
			return name
		}
		return ""
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
