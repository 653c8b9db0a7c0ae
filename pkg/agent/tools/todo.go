package tools

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Todo statuses.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
	TodoAbandoned  = "abandoned"
)

// TodoItem is one task.
type TodoItem struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

// TodoPhase is a named group of tasks.
type TodoPhase struct {
	Name  string     `json:"name"`
	Tasks []TodoItem `json:"tasks"`
}

// TodoDetails are the details of a todo result.
type TodoDetails struct {
	Phases         []TodoPhase     `json:"phases"`
	Storage        string          `json:"storage"`
	CompletedTasks []CompletedTask `json:"completedTasks,omitempty"`
}

// CompletedTask names a task completed by a call.
type CompletedTask struct {
	Phase   string `json:"phase"`
	Content string `json:"content"`
}

// TodoList is the session's todo state. Its methods are safe for
// concurrent use.
type TodoList struct {
	mu     sync.Mutex
	phases []TodoPhase
}

// Phases returns a copy of the list.
func (l *TodoList) Phases() []TodoPhase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return clonePhases(l.phases)
}

// Set replaces the list (resume: rebuilt from the session).
func (l *TodoList) Set(p []TodoPhase) {
	l.mu.Lock()
	l.phases = clonePhases(p)
	l.mu.Unlock()
}

func clonePhases(p []TodoPhase) []TodoPhase {
	out := make([]TodoPhase, len(p))
	for i := range p {
		out[i] = TodoPhase{Name: p[i].Name, Tasks: append([]TodoItem(nil), p[i].Tasks...)}
	}
	return out
}

// Todo returns the todo tool over list.
func Todo(list *TodoList, storage string) *Tool {
	return &Tool{
		Name: "todo",
		Description: "Track a phased task list. ops run in order: init {list:[{phase, items[]}]} replaces the list; " +
			"start {task}; done/drop/rm {task} or {phase} or neither (everything); append {phase, items[]}; view. " +
			"Any error discards the whole batch. At most one task is in progress.",
		Strict: true,
		Parameters: rawSchema(`{"type":"object","properties":{"ops":{"type":"array","minItems":1,"items":{"type":"object","properties":{
			"op":{"type":"string","enum":["init","start","done","rm","drop","append","view"]},
			"list":{"type":"array","items":{"type":"object","properties":{"phase":{"type":"string"},"items":{"type":"array","minItems":1,"items":{"type":"string"}}},"required":["phase","items"]}},
			"task":{"type":"string"},"phase":{"type":"string"},
			"items":{"type":"array","minItems":1,"items":{"type":"string"}}},"required":["op"]}}},"required":["ops"]}`),
		Run: func(_ context.Context, args map[string]any, _ func(Result)) (Result, error) {
			return list.apply(args, storage)
		},
	}
}

func (l *TodoList) apply(args map[string]any, storage string) (Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops, _ := args["ops"].([]any)
	work := clonePhases(l.phases)
	var errs []string
	readOnly := true
	for _, raw := range ops {
		op, _ := raw.(map[string]any)
		name := str(op, "op")
		if name != "view" {
			readOnly = false
		}
		if err := todoOp(&work, name, op); err != "" {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Result{}, &Error{Msg: "Errors: " + strings.Join(errs, "; "), Details: TodoDetails{Phases: clonePhases(l.phases), Storage: storage}}
	}
	if readOnly {
		if countTasks(work) == 0 {
			return TextResult("Todo list is empty.", TodoDetails{Phases: work, Storage: storage}), nil
		}
		return TextResult(renderTodo(work), TodoDetails{Phases: work, Storage: storage}), nil
	}
	normalizeTodo(work)
	var completed []CompletedTask
	for _, p := range work {
		for _, t := range p.Tasks {
			if t.Status == TodoCompleted && !wasCompleted(l.phases, p.Name, t.Content) {
				completed = append(completed, CompletedTask{Phase: p.Name, Content: t.Content})
			}
		}
	}
	l.phases = work
	d := TodoDetails{Phases: clonePhases(work), Storage: storage, CompletedTasks: completed}
	if countTasks(work) == 0 {
		return TextResult("Todo list cleared.", d), nil
	}
	return TextResult(renderTodo(work), d), nil
}

func wasCompleted(phases []TodoPhase, phase, content string) bool {
	for _, p := range phases {
		if p.Name == phase {
			for _, t := range p.Tasks {
				if t.Content == content {
					return t.Status == TodoCompleted
				}
			}
		}
	}
	return false
}

func countTasks(p []TodoPhase) int {
	n := 0
	for _, ph := range p {
		n += len(ph.Tasks)
	}
	return n
}

func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// findTask returns the first task with content across phases.
func findTask(p []TodoPhase, content string) (int, int) {
	for i := range p {
		for j := range p[i].Tasks {
			if p[i].Tasks[j].Content == content {
				return i, j
			}
		}
	}
	return -1, -1
}

func todoOp(work *[]TodoPhase, name string, op map[string]any) string {
	p := *work
	notFound := func(task string) string {
		if countTasks(p) == 0 {
			return fmt.Sprintf("Task %q not found (the todo list is empty; use init first)", task)
		}
		return fmt.Sprintf("Task %q not found", task)
	}
	switch name {
	case "view":
	case "init":
		list, ok := op["list"].([]any)
		if !ok {
			return "Missing list for init operation"
		}
		var out []TodoPhase
		seenPhase, seenTask := map[string]bool{}, map[string]bool{}
		for _, raw := range list {
			m, _ := raw.(map[string]any)
			ph := str(m, "phase")
			if seenPhase[ph] {
				return fmt.Sprintf("Duplicate phase %q in init list", ph)
			}
			seenPhase[ph] = true
			tp := TodoPhase{Name: ph}
			for _, it := range strs(m["items"]) {
				if seenTask[it] {
					return fmt.Sprintf("Duplicate task %q in init list", it)
				}
				seenTask[it] = true
				tp.Tasks = append(tp.Tasks, TodoItem{Content: it, Status: TodoPending})
			}
			out = append(out, tp)
		}
		*work = out
	case "start":
		task := str(op, "task")
		if task == "" {
			return "Missing task content"
		}
		i, j := findTask(p, task)
		if i < 0 {
			return notFound(task)
		}
		for a := range p {
			for b := range p[a].Tasks {
				if p[a].Tasks[b].Status == TodoInProgress {
					p[a].Tasks[b].Status = TodoPending
				}
			}
		}
		p[i].Tasks[j].Status = TodoInProgress
	case "done", "drop", "rm":
		status := TodoCompleted
		if name == "drop" {
			status = TodoAbandoned
		}
		task, phase := str(op, "task"), str(op, "phase")
		switch {
		case task != "":
			i, j := findTask(p, task)
			if i < 0 {
				return notFound(task)
			}
			if name == "rm" {
				p[i].Tasks = append(p[i].Tasks[:j], p[i].Tasks[j+1:]...)
			} else {
				p[i].Tasks[j].Status = status
			}
		case phase != "":
			i := phaseIndex(p, phase)
			if i < 0 {
				return fmt.Sprintf("Phase %q not found", phase)
			}
			setPhase(&p[i], name, status)
		default:
			for i := range p {
				setPhase(&p[i], name, status)
			}
		}
	case "append":
		phase := str(op, "phase")
		if phase == "" {
			return "Missing phase name for append operation"
		}
		items := strs(op["items"])
		if len(items) == 0 {
			return "Missing items for append operation"
		}
		for _, it := range items {
			if i, _ := findTask(p, it); i >= 0 {
				return fmt.Sprintf("Task %q already exists", it)
			}
		}
		i := phaseIndex(p, phase)
		if i < 0 {
			p = append(p, TodoPhase{Name: phase})
			i = len(p) - 1
		}
		for _, it := range items {
			p[i].Tasks = append(p[i].Tasks, TodoItem{Content: it, Status: TodoPending})
		}
		*work = p
	}
	return ""
}

func phaseIndex(p []TodoPhase, name string) int {
	for i := range p {
		if p[i].Name == name {
			return i
		}
	}
	return -1
}

func setPhase(p *TodoPhase, op, status string) {
	if op == "rm" {
		p.Tasks = nil
		return
	}
	for j := range p.Tasks {
		p.Tasks[j].Status = status
	}
}

// normalizeTodo keeps at most one in-progress task (the first) and, when
// none is, promotes the first pending one.
func normalizeTodo(p []TodoPhase) {
	seen := false
	for i := range p {
		for j := range p[i].Tasks {
			if p[i].Tasks[j].Status == TodoInProgress {
				if seen {
					p[i].Tasks[j].Status = TodoPending
				}
				seen = true
			}
		}
	}
	if seen {
		return
	}
	for i := range p {
		for j := range p[i].Tasks {
			if p[i].Tasks[j].Status == TodoPending {
				p[i].Tasks[j].Status = TodoInProgress
				return
			}
		}
	}
}

// renderTodo lays the list out: summary lines, then "## phase" headings
// with [ ]/[/]/[x]/[-] items.
func renderTodo(p []TodoPhase) string {
	total, done, current := 0, 0, ""
	curPhase := -1
	for i, ph := range p {
		for _, t := range ph.Tasks {
			if t.Status == TodoAbandoned {
				continue
			}
			total++
			if t.Status == TodoCompleted {
				done++
			}
			if t.Status == TodoInProgress {
				current, curPhase = t.Content, i
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Remaining: %d of %d tasks", total-done, total)
	if current != "" {
		fmt.Fprintf(&b, " (in progress: %q)", current)
	}
	b.WriteString("\n")
	if curPhase >= 0 {
		n, d := 0, 0
		for _, t := range p[curPhase].Tasks {
			if t.Status != TodoAbandoned {
				n++
				if t.Status == TodoCompleted {
					d++
				}
			}
		}
		fmt.Fprintf(&b, "Current phase %q: %d/%d done\n", p[curPhase].Name, d, n)
	}
	marks := map[string]string{TodoPending: "[ ]", TodoInProgress: "[/]", TodoCompleted: "[x]", TodoAbandoned: "[-]"}
	for _, ph := range p {
		b.WriteString("\n## " + ph.Name)
		for _, t := range ph.Tasks {
			b.WriteString("\n- " + marks[t.Status] + " " + t.Content)
		}
	}
	return b.String()
}
