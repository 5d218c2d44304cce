//go:build !linux

package main

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

var errLinux = errors.New("ecnswitch run needs Linux (AF_XDP)")

func checkPrivileges() error { return errLinux }

func pinCPUs([]int) error { return errLinux }

func watchLinks(context.Context, map[string]string, *zap.Logger) error { return errLinux }
