//go:build race

package server_test

// raceEnabled reports a -race build: memory figures are then the race
// detector's, not the broker's.
const raceEnabled = true
