//go:build !linux

package node

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

var errLinux = errors.New("node: a switch on AF_XDP ports needs Linux")

// CheckPrivileges reports that AF_XDP needs Linux.
func CheckPrivileges() error { return errLinux }

func pinCPUs([]int) error { return errLinux }

func watchLinks(context.Context, map[string]string, *zap.Logger, func(error)) error { return errLinux }
