//go:build !linux

package buildinfo

func kernelRelease() string { return "" }
