package node

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/bench"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Demo runs the MQ-ECN static-flow demo (demo.Run), each scheme's switch
// on AF_XDP ports with the default options, on the monotonic clock. When
// the machine has a CPU more than the worker needs (dataplane.Place), the
// worker gets its own CPU and everything else — this process's other
// threads, which run the hosts' TCP, and the hosts' receive processing —
// the rest, for as long as the demo runs.
func Demo(ctx context.Context, o demo.Options) (*demo.Result, error) {
	o.Start = demoStart(o)
	restore, err := place(1, &o.WorkerCPUs, &o.HostCPUs)
	if err != nil {
		return nil, err
	}
	defer restore()
	return demo.Run(ctx, o)
}

// demoStart starts the demo's switches on AF_XDP ports with the default
// options, on the monotonic clock.
func demoStart(o demo.Options) demo.StartFunc {
	return func(cfg dataplane.Config, ifaces []string) (demo.Switch, error) {
		return Start(cfg, Devices(ifaces, afxdp.Options{Logger: o.Logger}), timestamp.NewMonotonic(), o.Logger)
	}
}

// DemoBed brings up the demo's testbed (demo.Up) with its switches on
// AF_XDP ports and the CPUs placed as Demo places them, for experiments
// that bring their own traffic. down tears the testbed down and gives this
// process's threads their CPUs back.
func DemoBed(o demo.Options) (bed *demo.Bed, down func() error, err error) {
	o.Start = demoStart(o)
	restore, err := place(1, &o.WorkerCPUs, &o.HostCPUs)
	if err != nil {
		return nil, nil, err
	}
	bed, err = demo.Up(o)
	if err != nil {
		restore()
		return nil, nil, err
	}
	return bed, func() error {
		defer restore()
		return bed.Down()
	}, nil
}

// place splits the CPUs between workers and the rest (dataplane.Place),
// stores the split in *workerCPUs and *others, and restricts every thread
// of the process to the others: the workers pin themselves to theirs.
// restore gives the threads back the CPUs they had.
func place(workers int, workerCPUs, others *[]int) (restore func(), err error) {
	allowed, err := dataplane.AllowedCPUs()
	if err != nil {
		return nil, err
	}
	pl, err := dataplane.Place(workers)
	if err != nil || len(pl.Workers) == 0 {
		return func() {}, err
	}
	if err := pinCPUs(pl.Others); err != nil {
		return nil, fmt.Errorf("keep this process off the workers' CPUs: %w", err)
	}
	*workerCPUs, *others = pl.Workers, pl.Others
	return func() { pinCPUs(allowed) }, nil
}

// BenchSwitch runs the RFC 2544 switch benchmark (bench.RunSwitch), each
// ecnswitch device a switch on AF_XDP ports.
func BenchSwitch(ctx context.Context, o bench.SwitchOptions) (*bench.SwitchReport, error) {
	o.Start = benchStart(o.Logger)
	return bench.RunSwitch(ctx, o)
}

// benchStart returns the function the benchmarks start an ecnswitch
// device with: a switch on AF_XDP ports, logging to log (nil: nowhere).
func benchStart(log *zap.Logger) bench.StartSwitch {
	if log == nil {
		log = zap.NewNop()
	}
	return func(cfg dataplane.Config, ifaces []string, opts afxdp.Options, clock timestamp.Clock) (bench.Switch, error) {
		return Start(cfg, Devices(ifaces, opts), clock, log.Named("switch"))
	}
}

// BenchTCP runs the real-TCP benchmark (bench.RunTCP), ecnswitch on AF_XDP
// ports, with the CPUs placed as for the demo: the worker (and testpmd's
// forwarding lcore) on one CPU, the hosts on the rest.
func BenchTCP(ctx context.Context, o bench.TCPOptions) (*bench.TCPReport, error) {
	o.Start = benchStart(o.Logger)
	restore, err := place(1, &o.WorkerCPUs, &o.HostCPUs)
	if err != nil {
		return nil, err
	}
	defer restore()
	return bench.RunTCP(ctx, o)
}
