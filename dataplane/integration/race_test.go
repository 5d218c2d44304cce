//go:build race

package integration

// raceEnabled reports whether the test binary runs under the race detector.
const raceEnabled = true
