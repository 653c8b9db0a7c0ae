package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/export"
	"github.com/ompgo/omp/pkg/agent/rpc"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// rpcServer is `omp --mode rpc`: commands are read and handled in
// order on one goroutine; runs, bash commands and compactions go on in the
// background and report through the shared frame writer.
type rpcServer struct {
	a   *app
	rt  *agentRuntime
	ag  *agent.Agent
	out *rpc.Writer

	mu          sync.Mutex
	bashCancel  context.CancelFunc
	pendingBash []session.Message // user bash results during a run, appended once it has ended
	background  sync.WaitGroup
}

// runRPC serves the protocol until stdin closes (or SIGINT): then it
// aborts the run, flushes the session and exits 0.
func (a *app) runRPC(ctx context.Context, rt *agentRuntime) error {
	s := &rpcServer{a: a, rt: rt, ag: rt.ag, out: rpc.NewWriter(a.stdout)}
	defer s.out.Close()
	var buf []byte
	s.ag.Subscribe(func(e *agent.Event) {
		buf = e.AppendJSON(buf[:0], false)
		if e.Type == agent.EventAgentEnd {
			s.out.AgentEnd(buf, len(e.Messages))
			return
		}
		s.out.Raw(buf)
	})
	s.out.Value(map[string]any{"type": "ready", "protocolVersion": 1, "supportedProtocolVersions": []int{1},
		"maxFrameBytes": rpc.MaxFrame, "maxReassembledFrameBytes": rpc.MaxReassembly})
	s.out.Value(map[string]any{"type": "available_commands_update", "commands": []any{}})

	lines := make(chan []byte)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(s.a.stdin, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				lines <- line
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintf(a.stderr, "rpc: read stdin: %v\n", err)
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
		fmt.Fprintf(a.stderr, "rpc: %v\n", err)
	}
	session.WriteBreadcrumb(rt.dirs.AgentDir, rt.terminal, rt.cwd, sf.Path())
	return nil
}

func (s *rpcServer) handleLine(ctx context.Context, line []byte) {
	text := strings.TrimSpace(string(line))
	if text == "" {
		return // a blank line is ignored
	}
	var c rpc.Command
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		s.out.Value(rpc.Error(nil, "parse", "Failed to parse command: "+err.Error()))
		return
	}
	if c.Type == "" {
		s.out.Value(rpc.Error(nil, "parse", "Failed to parse command: missing type"))
		return
	}
	if resp := s.handle(ctx, &c); resp != nil {
		s.out.Value(resp)
	}
}

// userContent is a prompt's message with its images.
func userContent(c *rpc.Command) []llm.Content {
	out := []llm.Content{llm.Text(c.Message)}
	for _, img := range c.Images {
		if img.Type == llm.ContentImage {
			out = append(out, img)
		}
	}
	return out
}

// start schedules a run; a failure to schedule is reported later with the
// command's id.
func (s *rpcServer) start(ctx context.Context, c *rpc.Command, command string) error {
	return s.ag.Start(ctx, userContent(c), func(_ *llm.Message, err error) {
		if err != nil {
			s.out.Value(rpc.Error(c.ID, command, err.Error()))
		}
		s.flushBash()
	})
}

func (s *rpcServer) handle(ctx context.Context, c *rpc.Command) any {
	id := c.ID
	switch c.Type {
	case "prompt":
		if s.ag.IsStreaming() {
			switch c.StreamingBehavior {
			case "steer":
				s.ag.Steer(userContent(c))
			case "followUp":
				s.ag.FollowUp(userContent(c))
			default:
				return rpc.Error(id, "prompt", agent.ErrBusy.Error())
			}
			return rpc.OK(id, "prompt", nil)
		}
		s.out.Value(rpc.OK(id, "prompt", nil)) // the ack precedes agent_start
		if err := s.start(ctx, c, "prompt"); err != nil {
			return rpc.Error(id, "prompt", err.Error())
		}
		return nil
	case "steer", "follow_up":
		if !s.ag.IsStreaming() { // when idle, steer and follow_up start a run like prompt
			s.out.Value(rpc.OK(id, c.Type, nil))
			if err := s.start(ctx, c, c.Type); err != nil {
				return rpc.Error(id, c.Type, err.Error())
			}
			return nil
		}
		if c.Type == "steer" {
			s.ag.Steer(userContent(c))
		} else {
			s.ag.FollowUp(userContent(c))
		}
		return rpc.OK(id, c.Type, nil)
	case "abort":
		<-s.ag.Abort()
		return rpc.OK(id, "abort", nil)
	case "abort_and_prompt":
		<-s.ag.Abort()
		s.out.Value(rpc.OK(id, "abort_and_prompt", nil))
		if err := s.start(ctx, c, "abort_and_prompt"); err != nil {
			return rpc.Error(id, "abort_and_prompt", err.Error())
		}
		return nil
	case "get_state":
		return rpc.OK(id, "get_state", s.state())
	case "negotiate_protocol":
		return rpc.Error(id, "negotiate_protocol", "Unsupported RPC protocol version: "+string(c.ProtocolVersion))
	case "get_available_commands":
		return rpc.OK(id, c.Type, map[string]any{"commands": []any{}})
	case "set_model":
		m, ok := s.rt.cat.Lookup(c.Provider, c.ModelID)
		if !ok {
			return rpc.Error(id, c.Type, "Model not found: "+c.Provider+"/"+c.ModelID)
		}
		if err := s.switchModel(ctx, m, ""); err != nil {
			return rpc.Error(id, c.Type, err.Error())
		}
		return rpc.OK(id, c.Type, rpc.ModelOf(m))
	case "cycle_model":
		return s.cycleModel(ctx, id)
	case "get_available_models":
		var out []rpc.Model
		for _, m := range s.rt.cat.Models() {
			if m.ModelKind() != llm.KindChat {
				continue
			}
			if s.rt.keys.flag != "" && m.Provider == s.ag.CurrentModel().Provider || s.rt.keys.available(ctx, m.Provider) {
				out = append(out, rpc.ModelOf(m))
			}
		}
		if out == nil {
			out = []rpc.Model{}
		}
		return rpc.OK(id, c.Type, map[string]any{"models": out})
	case "set_thinking_level":
		if !isThinkingLevel(c.Level) {
			return rpc.Error(id, c.Type, "Invalid thinking level: "+c.Level)
		}
		if err := s.ag.SetThinkingLevel(clampLevel(s.ag.CurrentModel(), c.Level)); err != nil {
			return rpc.Error(id, c.Type, err.Error())
		}
		return rpc.OK(id, c.Type, nil)
	case "cycle_thinking_level":
		m := s.ag.CurrentModel()
		if !m.Reasoning {
			return rpc.Null(id, c.Type)
		}
		next := nextLevel(m, s.ag.CurrentThinkingLevel())
		if err := s.ag.SetThinkingLevel(next); err != nil {
			return rpc.Error(id, c.Type, err.Error())
		}
		return rpc.OK(id, c.Type, map[string]string{"level": next})
	case "set_steering_mode", "set_follow_up_mode", "set_interrupt_mode":
		set := map[string]func(string) error{"set_steering_mode": s.ag.SetSteeringMode,
			"set_follow_up_mode": s.ag.SetFollowUpMode, "set_interrupt_mode": s.ag.SetInterruptMode}[c.Type]
		if err := set(c.Mode); err != nil {
			return rpc.Error(id, c.Type, err.Error())
		}
		return rpc.OK(id, c.Type, nil)
	case "compact":
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			res, err := s.ag.CompactNow(ctx, c.CustomInstructions)
			if err != nil {
				s.out.Value(rpc.Error(id, "compact", err.Error()))
				return
			}
			s.out.Value(rpc.OK(id, "compact", res))
		}()
		return nil
	case "set_auto_compaction", "set_auto_retry":
		if c.Enabled == nil {
			return rpc.Error(id, c.Type, "enabled must be a boolean")
		}
		if c.Type == "set_auto_compaction" {
			s.ag.SetAutoCompaction(*c.Enabled)
		} else {
			s.ag.SetAutoRetry(*c.Enabled)
		}
		return rpc.OK(id, c.Type, nil)
	case "abort_retry":
		s.ag.AbortRetry()
		return rpc.OK(id, c.Type, nil)
	case "bash":
		s.bash(ctx, id, c.Command)
		return nil
	case "abort_bash":
		s.mu.Lock()
		if s.bashCancel != nil {
			s.bashCancel()
		}
		s.mu.Unlock()
		return rpc.OK(id, c.Type, nil)
	case "get_session_stats":
		return rpc.OK(id, c.Type, s.stats())
	case "export_html":
		// The interactive mode's minimal HTML, default path
		// <cwd>/omp-session-<id>.html.
		sf := s.ag.Session
		if sf.Path() == "" {
			return rpc.Error(id, c.Type, "Cannot export in-memory session to HTML")
		}
		path := c.OutputPath
		if path == "" {
			path = "omp-session-" + sf.Header().ID + ".html"
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.rt.cwd, path)
		}
		if err := export.HTML(sf, s.ag.SystemPrompt, path); err != nil {
			return rpc.Error(id, c.Type, err.Error())
		}
		return rpc.OK(id, c.Type, map[string]any{"path": path})
	case "get_last_assistant_text":
		msgs := s.ag.Messages()
		for i := len(msgs) - 1; i >= 0; i-- {
			if m := msgs[i].LLM; m != nil && m.Role == llm.RoleAssistant {
				return rpc.OK(id, c.Type, map[string]any{"text": assistantText(m)})
			}
		}
		return rpc.OK(id, c.Type, map[string]any{"text": nil})
	case "get_messages":
		msgs := s.ag.Messages()
		raw := make([]json.RawMessage, len(msgs))
		for i, m := range msgs {
			raw[i] = m.Raw
		}
		return rpc.OK(id, c.Type, map[string]any{"messages": raw})
	case "get_branch_messages":
		return rpc.OK(id, c.Type, map[string]any{"messages": s.branchMessages()})
	case "set_session_name":
		name := ""
		if c.Name != nil {
			name = strings.TrimSpace(*c.Name)
		}
		if err := s.ag.Session.SetTitle(name); err != nil {
			return rpc.Error(id, c.Type, err.Error())
		}
		return rpc.OK(id, c.Type, nil)
	case "new_session", "switch_session", "branch":
		return s.sessionChange(id, c)
	}
	return rpc.Error(nil, c.Type, "Unknown command: "+c.Type)
}

// switchModel makes m the session model: credential, provider, the
// model_change entry, and the level clamped to what m supports.
func (s *rpcServer) switchModel(ctx context.Context, m llm.Model, role string) error {
	return s.rt.switchModel(ctx, m, role)
}

// cycleModel moves to the next model with credentials, as a temporary
// model change; null when there is no other.
func (s *rpcServer) cycleModel(ctx context.Context, id *string) any {
	cur := s.ag.CurrentModel()
	var avail []llm.Model
	for _, m := range s.rt.cat.Models() {
		if m.ModelKind() == llm.KindChat && (m.Key() == cur.Key() || s.rt.keys.available(ctx, m.Provider)) {
			avail = append(avail, m)
		}
	}
	if len(avail) < 2 {
		return rpc.Null(id, "cycle_model")
	}
	next := avail[0]
	for i, m := range avail {
		if m.Key() == cur.Key() {
			next = avail[(i+1)%len(avail)]
		}
	}
	if err := s.switchModel(ctx, next, "temporary"); err != nil {
		return rpc.Error(id, "cycle_model", err.Error())
	}
	return rpc.OK(id, "cycle_model", map[string]any{"model": rpc.ModelOf(next),
		"thinkingLevel": s.ag.CurrentThinkingLevel(), "isScoped": false})
}

// bash runs a user command: the response carries the result;
// its bashExecution message joins the session now, or after the run.
func (s *rpcServer) bash(ctx context.Context, id *string, command string) {
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
		res, err := tools.RunCommand(bctx, s.rt.tenv, s.rt.bashOpt, command)
		if err != nil {
			s.out.Value(rpc.Error(id, "bash", err.Error()))
			return
		}
		if m, err := bashExecution(command, res, false, s.a.now()); err == nil {
			s.mu.Lock()
			s.pendingBash = append(s.pendingBash, m)
			s.mu.Unlock()
		}
		if !s.ag.IsStreaming() {
			s.flushBash()
		}
		s.out.Value(rpc.OK(id, "bash", res))
	}()
}

// flushBash appends the bash executions held back while a run was active.
func (s *rpcServer) flushBash() {
	s.mu.Lock()
	pending := s.pendingBash
	s.pendingBash = nil
	s.mu.Unlock()
	for _, m := range pending {
		if err := s.ag.AppendMessage(m); err != nil {
			fmt.Fprintf(s.a.stderr, "rpc: %v\n", err)
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
