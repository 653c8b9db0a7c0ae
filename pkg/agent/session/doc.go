// Package session reads and writes the coding agent's JSONL v3 session
// files: the header, the id/parentId entry tree, the leaf,
// and the reconstruction of the LLM context from the active path.
//
// Compatibility with the reference implementation comes first: every line
// the package does not write itself (unknown entry types, unknown fields,
// a leading title slot, lines that do not parse) is kept byte-for-byte and
// written back verbatim when the file is rewritten. Only the entries this
// package appends are produced by its own encoder.
//
// A File is not safe for use by several processes at once; within a
// process its methods are serialised by one mutex.
package session
