package node

import (
	"context"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/bench"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Demo runs the MQ-ECN static-flow demo (demo.Run), each scheme's switch
// on AF_XDP ports with the default options, on the monotonic clock.
func Demo(ctx context.Context, o demo.Options) (*demo.Result, error) {
	o.Start = func(cfg dataplane.Config, ifaces []string) (demo.Switch, error) {
		return Start(cfg, Devices(ifaces, afxdp.Options{Logger: o.Logger}), timestamp.NewMonotonic(), o.Logger)
	}
	return demo.Run(ctx, o)
}

// BenchSwitch runs the RFC 2544 switch benchmark (bench.RunSwitch), each
// ecnswitch device a switch on AF_XDP ports.
func BenchSwitch(ctx context.Context, o bench.SwitchOptions) (*bench.SwitchReport, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	o.Start = func(cfg dataplane.Config, ifaces []string, opts afxdp.Options, clock timestamp.Clock) (bench.Switch, error) {
		return Start(cfg, Devices(ifaces, opts), clock, log.Named("switch"))
	}
	return bench.RunSwitch(ctx, o)
}
