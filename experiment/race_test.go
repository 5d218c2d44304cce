//go:build race

package experiment

// raceEnabled reports whether the test binary runs under the race detector.
const raceEnabled = true
