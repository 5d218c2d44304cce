//go:build !race

package race

// Enabled reports whether the binary runs under the race detector.
const Enabled = false
