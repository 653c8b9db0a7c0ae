// Package compaction is the agent's context compaction and branch
// summaries (agent.md §6): token accounting (D24), the threshold and its
// overrides (D23), tool-output pruning (D26), the cut point and split
// turns (§6.5, §6.6), summary generation through a caller-supplied model
// call (§6.7, D52), the <files> block (§6.8, D31) and branch summaries
// (§6.10). It holds no model, credential or session state of its own: the
// agent (pkg/agent) wires it to the session file and the current model.
package compaction
