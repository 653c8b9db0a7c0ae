// Package compaction is the agent's context compaction and branch
// summaries: token accounting, the threshold and its
// overrides, tool-output pruning, the cut point and split
// turns, summary generation through a caller-supplied model
// call, the <files> block and branch summaries.
// It holds no model, credential or session state of its own: the
// agent (pkg/agent) wires it to the session file and the current model.
package compaction
