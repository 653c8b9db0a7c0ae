//go:build race

package brokerapi_test

// raceEnabled reports a -race build: memory figures are then the race
// detector's, not the broker's.
const raceEnabled = true
