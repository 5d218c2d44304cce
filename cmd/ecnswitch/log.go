package main

import (
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger returns a console logger at level (debug, info, warn, error)
// writing to w. Loggers log lifecycle events only; nothing per packet.
func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil || lvl < zapcore.DebugLevel || lvl > zapcore.ErrorLevel {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeLevel = zapcore.CapitalLevelEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core, zap.ErrorOutput(zapcore.AddSync(w))), nil
}

// logLevel picks the flag's level, else the config's, else info.
func logLevel(flagLevel, configLevel string) string {
	switch {
	case flagLevel != "":
		return flagLevel
	case configLevel != "":
		return configLevel
	}
	return "info"
}
