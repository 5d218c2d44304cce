// Package race reports whether the binary runs under the race detector,
// for tests whose timing the detector's slowdown changes.
package race
