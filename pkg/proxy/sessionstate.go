package proxy

import (
	"container/list"
	"sync"

	"github.com/ompgo/omp/pkg/llm"
)

// MaxSessionStates bounds how many client sessions keep provider state
// (the fallbacks their upstreams taught, llm.SessionState): past it the
// least recently used session forgets its state, so distinct session keys
// from anonymous clients cannot grow memory without limit. A forgotten
// session only pays the fallback's extra upstream attempt again.
const MaxSessionStates = 4096

// sessionStates is an LRU map from client session key to its provider
// state.
type sessionStates struct {
	max int
	mu  sync.Mutex
	// order holds *sessionEntry, most recently used first; byKey indexes
	// it. Both guarded by mu.
	order *list.List
	byKey map[string]*list.Element
}

type sessionEntry struct {
	key   string
	state *llm.SessionState
}

func newSessionStates(max int) *sessionStates {
	return &sessionStates{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the state of session key, created on first use; nil for the
// empty key (a request without a session remembers nothing).
func (ss *sessionStates) get(key string) *llm.SessionState {
	if key == "" {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if el, ok := ss.byKey[key]; ok {
		ss.order.MoveToFront(el)
		return el.Value.(*sessionEntry).state
	}
	e := &sessionEntry{key: key, state: &llm.SessionState{}}
	ss.byKey[key] = ss.order.PushFront(e)
	for ss.order.Len() > ss.max {
		last := ss.order.Back()
		ss.order.Remove(last)
		delete(ss.byKey, last.Value.(*sessionEntry).key)
	}
	return e.state
}

// len is the number of sessions with state.
func (ss *sessionStates) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.order.Len()
}
