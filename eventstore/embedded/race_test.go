//go:build race

package embedded

// raceEnabled shortens the slowest tests under the race detector.
const raceEnabled = true
