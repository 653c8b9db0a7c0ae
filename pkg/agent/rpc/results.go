package rpc

import (
	"cmp"
	"strconv"
	"sync"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/llm"
)

// PromptResult is the prompt_result frame: the outcome of one accepted
// prompt or abort_and_prompt, written after its response once the agent
// has yielded.
type PromptResult struct {
	Type           string       `json:"type"`
	ID             *string      `json:"id,omitempty"`
	AgentInvoked   bool         `json:"agentInvoked"`
	Status         string       `json:"status"` // completed, aborted or error
	SessionSettled bool         `json:"sessionSettled"`
	Error          *PromptError `json:"error,omitempty"`
}

// PromptError is why a prompt ended in error.
type PromptError struct {
	Message    string `json:"message"`
	Provider   string `json:"provider,omitempty"`
	Model      string `json:"model,omitempty"`
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Retryable  bool   `json:"retryable"`
}

// Prompt outcomes.
const (
	StatusCompleted = "completed"
	StatusAborted   = "aborted"
	StatusError     = "error"
)

// outcome is how a run ended, as prompt_result reports it.
type outcome struct {
	invoked bool
	status  string
	err     *PromptError
}

// outcomeOf is the outcome of a run that ended with final (its last
// assistant message) and err (a failure outside the model turn).
func outcomeOf(final *llm.Message, err error) outcome {
	switch {
	case err != nil:
		return outcome{invoked: final != nil, status: StatusError, err: &PromptError{Message: err.Error()}}
	case final == nil:
		return outcome{invoked: true, status: StatusCompleted}
	case final.StopReason == llm.StopError:
		return outcome{invoked: true, status: StatusError, err: &PromptError{
			Message:    cmp.Or(final.ErrorMessage, "Provider request failed"),
			Provider:   final.Provider,
			Model:      final.Model,
			HTTPStatus: final.ErrorStatus,
			Retryable:  agent.IsTransient(final),
		}}
	case final.StopReason == llm.StopAborted:
		return outcome{invoked: true, status: StatusAborted}
	}
	return outcome{invoked: true, status: StatusCompleted}
}

// runTickets are the prompts waiting for one run: the one that started
// it and those queued into it while it streamed. Once the run has ended
// a late ticket is answered at once with the run's outcome.
type runTickets struct {
	ids   []*string
	ended bool
	out   outcome
}

// stream is what the server tracks of the event stream: message ids, the
// event filter and whether agent activity awaits its session_settled.
type stream struct {
	mu     sync.Mutex
	buf    []byte
	seq    int      // the last message id handed out
	open   []string // ids of the messages started and not yet ended
	filter map[string]bool
	active bool // an agent_start has been seen since the last session_settled
}

// messageID stamps e's frame with the id of its message: message_start
// opens a new id, message_update uses the open one, message_end closes
// it; agent_end forgets any left open. Ids are unique per process.
func (st *stream) messageID(typ string) string {
	switch typ {
	case agent.EventMessageStart:
		id := st.next()
		st.open = append(st.open, id)
		return id
	case agent.EventMessageUpdate:
		if len(st.open) == 0 {
			st.open = append(st.open, st.next())
		}
		return st.open[len(st.open)-1]
	case agent.EventMessageEnd:
		if n := len(st.open); n > 0 {
			id := st.open[n-1]
			st.open = st.open[:n-1]
			return id
		}
		return st.next()
	case agent.EventAgentEnd:
		st.open = st.open[:0]
	}
	return ""
}

func (st *stream) next() string {
	st.seq++
	return "msg-" + strconv.Itoa(st.seq)
}

// withMember appends "key":"value" as the last member of the encoded
// object b.
func withMember(b []byte, key, value string) []byte {
	if len(b) < 2 || b[len(b)-1] != '}' {
		return b
	}
	b = b[:len(b)-1]
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = jsonw.String(append(jsonw.String(b, key), ':'), value)
	return append(b, '}')
}

// setFilter makes events (nil: every event) the event types written;
// it returns the filter as set_event_filter reports it.
func (st *stream) setFilter(events []string) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if events == nil {
		st.filter = nil
		return nil
	}
	st.filter = map[string]bool{}
	out := []string{}
	for _, e := range events {
		if !st.filter[e] {
			st.filter[e] = true
			out = append(out, e)
		}
	}
	return out
}

// forward writes the agent event e, stamped with its message id, unless
// the filter leaves its type out.
func (s *server) forward(e *agent.Event) {
	st := &s.stream
	st.mu.Lock()
	defer st.mu.Unlock()
	if e.Type == agent.EventAgentStart {
		st.active = true
	}
	id := st.messageID(e.Type)
	if st.filter != nil && !st.filter[e.Type] {
		return
	}
	st.buf = e.AppendJSON(st.buf[:0], false)
	if id != "" {
		st.buf = withMember(st.buf, "messageId", id)
	}
	if e.Type == agent.EventAgentEnd {
		s.out.AgentEnd(st.buf, len(e.Messages), e.IsTerminal, e.Yielded)
		return
	}
	s.out.Raw(st.buf)
}

// hasPendingAsyncWork reports background work of the session that can
// still add to it after a run. The agent runs no asynchronous tool jobs,
// so there is none.
func (s *server) hasPendingAsyncWork() bool { return false }

// isSettled reports whether the session is at rest: no run, nothing
// queued, no pending asynchronous work.
func (s *server) isSettled() bool {
	ns, nf := s.ag.QueuedCounts()
	return !s.ag.IsStreaming() && ns+nf == 0 && !s.hasPendingAsyncWork()
}

// runEnded answers the prompts waiting for the run that ended with final
// and err, then writes session_settled when the agent activity since the
// last one has come to rest.
func (s *server) runEnded(run *runTickets, final *llm.Message, err error) {
	out := outcomeOf(final, err)
	s.mu.Lock()
	run.ended, run.out = true, out
	ids := run.ids
	run.ids = nil
	s.mu.Unlock()
	for _, id := range ids {
		s.promptResult(id, out)
	}
	s.checkSettled()
}

// promptResult writes the prompt_result of the prompt with id.
func (s *server) promptResult(id *string, out outcome) {
	s.out.Value(&PromptResult{Type: "prompt_result", ID: id, AgentInvoked: out.invoked, Status: out.status,
		SessionSettled: s.isSettled(), Error: out.err})
}

// checkSettled writes session_settled once the agent activity seen since
// the last one has come to rest.
func (s *server) checkSettled() {
	st := &s.stream
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.active || !s.isSettled() {
		return
	}
	st.active = false
	s.out.Value(map[string]string{"type": "session_settled"})
}

// addTicket attaches the prompt id to the active run; when that run
// has already ended the prompt is answered with its outcome at once.
func (s *server) addTicket(id *string) {
	s.mu.Lock()
	run := s.run
	if run != nil && !run.ended {
		run.ids = append(run.ids, id)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	out := outcome{invoked: true, status: StatusCompleted}
	if run != nil {
		out = run.out
	}
	s.promptResult(id, out)
}
