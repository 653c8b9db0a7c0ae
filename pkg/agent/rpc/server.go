package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/export"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// Host is what the server needs from the program that runs it: the
// agent, its streams and surroundings, and the model and credential
// operations that belong to the program's runtime.
type Host struct {
	Agent   *agent.Agent
	Catalog *llm.Catalog
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Now     func() time.Time

	Cwd      string // the directory export paths and new sessions are relative to
	AgentDir string // blobs of new sessions and the resume breadcrumb live here
	Terminal string // the breadcrumb's terminal

	ToolEnv     *tools.Env
	BashOptions tools.BashOptions

	// FixedKey is set when one key was given for the current model's
	// provider (--api-key): that provider counts as having credentials.
	FixedKey bool
	// Available reports whether provider has credentials.
	Available func(ctx context.Context, provider string) bool
	// SwitchModel makes m the agent's model (credential, provider, a
	// model_change entry with role, the thinking level clamped).
	SwitchModel func(ctx context.Context, m llm.Model, role string) error
	// RestoreModel makes m the agent's model without a model_change entry
	// (a resumed session's model); an error leaves the current one.
	RestoreModel func(ctx context.Context, m llm.Model) error
	// SessionChanged is told of each session the agent moves to.
	SessionChanged func(sf *session.File)
}

// server is `omp --mode rpc`: commands are read and handled in
// order on one goroutine; runs, bash commands and compactions go on in the
// background and report through the shared frame writer.
type server struct {
	h   *Host
	ag  *agent.Agent
	out *Writer

	mu          sync.Mutex
	bashCancel  context.CancelFunc
	pendingBash []session.Message // user bash results during a run, appended once it has ended
	background  sync.WaitGroup
	run         *runTickets // the prompts waiting for the latest run

	stream stream
}

// Serve serves the protocol until stdin closes (or ctx ends): then it
// aborts the run, flushes the session and returns. Available, SwitchModel
// and RestoreModel are required; Now defaults to time.Now, Stderr to
// nowhere.
func Serve(ctx context.Context, h *Host) error {
	if h.Now == nil {
		h.Now = time.Now
	}
	if h.Stderr == nil {
		h.Stderr = io.Discard
	}
	s := &server{h: h, ag: h.Agent, out: NewWriter(h.Stdout)}
	defer s.out.Close()
	s.ag.Subscribe(s.forward)
	s.out.Value(map[string]any{"type": "ready", "protocolVersion": 1, "supportedProtocolVersions": []int{1, 2},
		"maxFrameBytes": MaxFrame, "maxReassembledFrameBytes": MaxReassembly})
	s.out.Value(map[string]any{"type": "available_commands_update", "commands": availableCommands()})

	lines := make(chan []byte)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(h.Stdin, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				lines <- line
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintf(h.Stderr, "rpc: read stdin: %v\n", err)
				}
				return
			}
		}
	}()
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break loop
			}
			s.handleLine(ctx, line)
		case <-ctx.Done():
			break loop
		}
	}
	<-s.ag.Abort()
	s.mu.Lock()
	if s.bashCancel != nil {
		s.bashCancel()
	}
	s.mu.Unlock()
	s.background.Wait()
	s.flushBash()
	sf := s.ag.Session
	if err := sf.Persist(); err != nil {
		fmt.Fprintf(h.Stderr, "rpc: %v\n", err)
	}
	session.WriteBreadcrumb(h.AgentDir, h.Terminal, h.Cwd, sf.Path())
	return nil
}

func (s *server) handleLine(ctx context.Context, line []byte) {
	text := strings.TrimSpace(string(line))
	if text == "" {
		return // a blank line is ignored
	}
	var c Command
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		s.out.Value(Error(nil, "parse", "Failed to parse command: "+err.Error()))
		return
	}
	if c.Type == "" {
		s.out.Value(Error(nil, "parse", "Failed to parse command: missing type"))
		return
	}
	if resp := s.handle(ctx, &c); resp != nil {
		s.out.Value(resp)
	}
}

// userContent is a prompt's message with its images.
func userContent(c *Command) []llm.Content {
	out := []llm.Content{llm.Text(c.Message)}
	for _, img := range c.Images {
		if img.Type == llm.ContentImage {
			out = append(out, img)
		}
	}
	return out
}

// start schedules a run; a failure to schedule is reported later with the
// command's id. With ticket the command is a prompt that gets its
// prompt_result when the run ends.
func (s *server) start(ctx context.Context, c *Command, command string, ticket bool) error {
	run := &runTickets{}
	if ticket {
		run.ids = []*string{c.ID}
	}
	s.mu.Lock()
	prev := s.run
	s.run = run
	s.mu.Unlock()
	s.background.Add(1) // Serve waits for the run's answers before it returns
	err := s.ag.Start(ctx, userContent(c), func(final *llm.Message, err error) {
		defer s.background.Done()
		if err != nil {
			s.out.Value(Error(c.ID, command, err.Error()))
		}
		s.flushBash()
		s.runEnded(run, final, err)
	})
	if err != nil {
		s.background.Done()
		s.mu.Lock()
		s.run = prev
		s.mu.Unlock()
	}
	return err
}

func (s *server) handle(ctx context.Context, c *Command) any {
	id := c.ID
	switch c.Type {
	case "prompt":
		if text, ok := strings.CutPrefix(c.Message, "/"); ok {
			if data, ok := s.slashCommand(text); ok {
				return OK(id, "prompt", data)
			}
		}
		if s.ag.IsStreaming() {
			switch c.StreamingBehavior {
			case "steer":
				s.ag.Steer(userContent(c))
			case "followUp":
				s.ag.FollowUp(userContent(c))
			default:
				return Error(id, "prompt", agent.ErrBusy.Error())
			}
			// The queued message is answered with the run it joins.
			s.out.Value(OK(id, "prompt", nil))
			s.addTicket(id)
			return nil
		}
		s.out.Value(OK(id, "prompt", nil)) // the ack precedes agent_start
		if err := s.start(ctx, c, "prompt", true); err != nil {
			s.promptResult(id, outcome{status: StatusError, err: &PromptError{Message: err.Error()}})
			return Error(id, "prompt", err.Error())
		}
		return nil
	case "steer", "follow_up":
		if !s.ag.IsStreaming() { // when idle, steer and follow_up start a run like prompt
			s.out.Value(OK(id, c.Type, nil))
			if err := s.start(ctx, c, c.Type, false); err != nil {
				return Error(id, c.Type, err.Error())
			}
			return nil
		}
		if c.Type == "steer" {
			s.ag.Steer(userContent(c))
		} else {
			s.ag.FollowUp(userContent(c))
		}
		return OK(id, c.Type, nil)
	case "abort":
		<-s.ag.Abort()
		return OK(id, "abort", nil)
	case "abort_and_prompt":
		<-s.ag.Abort()
		s.out.Value(OK(id, "abort_and_prompt", nil))
		if err := s.start(ctx, c, "abort_and_prompt", true); err != nil {
			s.promptResult(id, outcome{status: StatusError, err: &PromptError{Message: err.Error()}})
			return Error(id, "abort_and_prompt", err.Error())
		}
		return nil
	case "get_state":
		return OK(id, "get_state", s.state())
	case "negotiate_protocol":
		return s.negotiate(id, c.ProtocolVersion)
	case "get_available_commands":
		return OK(id, c.Type, map[string]any{"commands": availableCommands()})
	case "get_available_thinking_levels":
		return OK(id, c.Type, map[string]any{"levels": agent.AvailableThinkingLevels(s.ag.CurrentModel())})
	case "set_event_filter":
		var events []string
		if len(c.Events) == 0 || json.Unmarshal(c.Events, &events) != nil || slices.Contains(events, "") {
			return Error(id, c.Type, "events must be null or an array of non-empty event type strings")
		}
		return OK(id, c.Type, map[string]any{"events": s.stream.setFilter(events)})
	case "get_entries":
		data, err := entriesSince(s.ag.Session, c.Since)
		if err != nil {
			return ErrorCode(id, c.Type, err.Error(), "unknown_since")
		}
		return OK(id, c.Type, data)
	case "get_tree":
		return OK(id, c.Type, map[string]any{"tree": tree(s.ag.Session.Entries()), "leafId": leafID(s.ag.Session)})
	case "set_model":
		m, ok := s.h.Catalog.Lookup(c.Provider, c.ModelID)
		if !ok {
			return Error(id, c.Type, "Model not found: "+c.Provider+"/"+c.ModelID)
		}
		if err := s.switchModel(ctx, m, ""); err != nil {
			return Error(id, c.Type, err.Error())
		}
		return OK(id, c.Type, ModelOf(m))
	case "cycle_model":
		return s.cycleModel(ctx, id)
	case "get_available_models":
		var out []Model
		for _, m := range s.h.Catalog.Models() {
			if m.ModelKind() != llm.KindChat {
				continue
			}
			if s.h.FixedKey && m.Provider == s.ag.CurrentModel().Provider || s.h.Available(ctx, m.Provider) {
				out = append(out, ModelOf(m))
			}
		}
		if out == nil {
			out = []Model{}
		}
		return OK(id, c.Type, map[string]any{"models": out})
	case "set_thinking_level":
		if !agent.IsThinkingLevel(c.Level) {
			return Error(id, c.Type, "Invalid thinking level: "+c.Level)
		}
		if err := s.ag.SetThinkingLevel(agent.ClampThinkingLevel(s.ag.CurrentModel(), c.Level)); err != nil {
			return Error(id, c.Type, err.Error())
		}
		return OK(id, c.Type, nil)
	case "cycle_thinking_level":
		m := s.ag.CurrentModel()
		if !m.Reasoning {
			return Null(id, c.Type)
		}
		next := agent.NextThinkingLevel(m, s.ag.CurrentThinkingLevel())
		if err := s.ag.SetThinkingLevel(next); err != nil {
			return Error(id, c.Type, err.Error())
		}
		return OK(id, c.Type, map[string]string{"level": next})
	case "set_steering_mode", "set_follow_up_mode", "set_interrupt_mode":
		set := map[string]func(string) error{"set_steering_mode": s.ag.SetSteeringMode,
			"set_follow_up_mode": s.ag.SetFollowUpMode, "set_interrupt_mode": s.ag.SetInterruptMode}[c.Type]
		if err := set(c.Mode); err != nil {
			return Error(id, c.Type, err.Error())
		}
		return OK(id, c.Type, nil)
	case "compact":
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			res, err := s.ag.CompactNow(ctx, c.CustomInstructions)
			if err != nil {
				s.out.Value(Error(id, "compact", err.Error()))
				return
			}
			s.out.Value(OK(id, "compact", res))
		}()
		return nil
	case "set_auto_compaction", "set_auto_retry":
		if c.Enabled == nil {
			return Error(id, c.Type, "enabled must be a boolean")
		}
		if c.Type == "set_auto_compaction" {
			s.ag.SetAutoCompaction(*c.Enabled)
		} else {
			s.ag.SetAutoRetry(*c.Enabled)
		}
		return OK(id, c.Type, nil)
	case "abort_retry":
		s.ag.AbortRetry()
		return OK(id, c.Type, nil)
	case "bash":
		s.bash(ctx, id, c.Command)
		return nil
	case "abort_bash":
		s.mu.Lock()
		if s.bashCancel != nil {
			s.bashCancel()
		}
		s.mu.Unlock()
		return OK(id, c.Type, nil)
	case "get_session_stats":
		return OK(id, c.Type, s.stats())
	case "export_html":
		// The interactive mode's minimal HTML, default path
		// <cwd>/omp-session-<id>.html.
		sf := s.ag.Session
		if sf.Path() == "" {
			return Error(id, c.Type, "Cannot export in-memory session to HTML")
		}
		path := c.OutputPath
		if path == "" {
			path = "omp-session-" + sf.Header().ID + ".html"
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.h.Cwd, path)
		}
		if err := export.HTML(sf, s.ag.SystemPrompt, path); err != nil {
			return Error(id, c.Type, err.Error())
		}
		return OK(id, c.Type, map[string]any{"path": path})
	case "get_last_assistant_text":
		msgs := s.ag.Messages()
		for i := len(msgs) - 1; i >= 0; i-- {
			if m := msgs[i].LLM; m != nil && m.Role == llm.RoleAssistant {
				return OK(id, c.Type, map[string]any{"text": assistantText(m)})
			}
		}
		return OK(id, c.Type, map[string]any{"text": nil})
	case "get_messages_page":
		return s.messagesPage(id, c)
	case "get_messages":
		msgs := s.ag.Messages()
		raw := make([]json.RawMessage, len(msgs))
		for i, m := range msgs {
			raw[i] = m.Raw
		}
		return OK(id, c.Type, map[string]any{"messages": raw})
	case "get_branch_messages":
		return OK(id, c.Type, map[string]any{"messages": s.branchMessages()})
	case "set_session_name":
		name := ""
		if c.Name != nil {
			name = strings.TrimSpace(*c.Name)
		}
		if err := s.ag.Session.SetTitle(name); err != nil {
			return Error(id, c.Type, err.Error())
		}
		return OK(id, c.Type, nil)
	case "new_session", "switch_session", "branch":
		return s.sessionChange(id, c)
	case "open_session":
		return s.openSession(id, c.SessionDir)
	}
	return Error(id, c.Type, "Unknown command: "+c.Type)
}

// switchModel makes m the session model: credential, provider, the
// model_change entry, and the level clamped to what m supports.
func (s *server) switchModel(ctx context.Context, m llm.Model, role string) error {
	return s.h.SwitchModel(ctx, m, role)
}

// cycleModel moves to the next model with credentials, as a temporary
// model change; null when there is no other.
func (s *server) cycleModel(ctx context.Context, id *string) any {
	cur := s.ag.CurrentModel()
	var avail []llm.Model
	for _, m := range s.h.Catalog.Models() {
		if m.ModelKind() == llm.KindChat && (m.Key() == cur.Key() || s.h.Available(ctx, m.Provider)) {
			avail = append(avail, m)
		}
	}
	if len(avail) < 2 {
		return Null(id, "cycle_model")
	}
	next := avail[0]
	for i, m := range avail {
		if m.Key() == cur.Key() {
			next = avail[(i+1)%len(avail)]
		}
	}
	if err := s.switchModel(ctx, next, "temporary"); err != nil {
		return Error(id, "cycle_model", err.Error())
	}
	return OK(id, "cycle_model", map[string]any{"model": ModelOf(next),
		"thinkingLevel": s.ag.CurrentThinkingLevel(), "isScoped": false})
}

// bash runs a user command: the response carries the result;
// its bashExecution message joins the session now, or after the run.
func (s *server) bash(ctx context.Context, id *string, command string) {
	bctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	if s.bashCancel != nil {
		s.bashCancel()
	}
	s.bashCancel = cancel
	s.mu.Unlock()
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		defer cancel()
		res, err := tools.RunCommand(bctx, s.h.ToolEnv, s.h.BashOptions, command)
		if err != nil {
			s.out.Value(Error(id, "bash", err.Error()))
			return
		}
		if m, err := agent.BashExecution(command, res, false, s.h.Now()); err == nil {
			s.mu.Lock()
			s.pendingBash = append(s.pendingBash, m)
			s.mu.Unlock()
		}
		if !s.ag.IsStreaming() {
			s.flushBash()
		}
		s.out.Value(OK(id, "bash", res))
	}()
}

// flushBash appends the bash executions held back while a run was active.
func (s *server) flushBash() {
	s.mu.Lock()
	pending := s.pendingBash
	s.pendingBash = nil
	s.mu.Unlock()
	for _, m := range pending {
		if err := s.ag.AppendMessage(m); err != nil {
			fmt.Fprintf(s.h.Stderr, "rpc: %v\n", err)
		}
	}
}

func assistantText(m *llm.Message) string {
	var texts []string
	for _, c := range m.Content {
		if c.Type == llm.ContentText {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// negotiate answers negotiate_protocol: only version 2 is accepted, and
// the frames written after the answer use it.
func (s *server) negotiate(id *string, version json.RawMessage) any {
	var n float64
	if json.Unmarshal(version, &n) == nil && n == 2 {
		s.out.EnableChunks(OK(id, "negotiate_protocol", map[string]int{"protocolVersion": 2}))
		return nil
	}
	shown := string(version)
	var str string
	switch {
	case len(version) == 0:
		shown = "undefined"
	case version[0] == '"' && json.Unmarshal(version, &str) == nil:
		shown = str
	}
	return Error(id, "negotiate_protocol", "Unsupported RPC protocol version: "+shown)
}
