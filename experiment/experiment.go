package experiment

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/node"
)

// Experiment is one of the papers' experiments as a command.
type Experiment struct {
	Name    string // as `ecnswitch experiment NAME` takes it
	Paper   string // what it reproduces, e.g. "001 §5.1.1, Fig. 3 and 6"
	Summary string // one line
	// Virtual says the experiment runs in virtual time, in this process:
	// no testbed, no root.
	Virtual bool
	// Run runs the experiment and returns its report. On an error it
	// returns what it has, or nil; the testbed is down either way.
	Run func(ctx context.Context, env Env) (*Report, error)
}

// All returns every experiment, in the order `make experiments` runs them.
func All() []Experiment {
	return []Experiment{mqecnStatic(), mqecnQueues(), pmsbSched(), ecnsharpRTT(), ecnsharpIncast(), fctExperiment(fctWorkload), bccShared(), dxExperiment(), dxClosedLoopExperiment(), dxStepsExperiment(), fctExperiment(fctDataMining)}
}

// Names returns the names of every experiment, in order.
func Names() []string {
	var names []string
	for _, e := range All() {
		names = append(names, e.Name)
	}
	return names
}

// Lookup returns the experiment called name.
func Lookup(name string) (Experiment, error) {
	i := slices.IndexFunc(All(), func(e Experiment) bool { return e.Name == name })
	if i < 0 {
		return Experiment{}, fmt.Errorf("experiment %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return All()[i], nil
}

// Env is what an experiment runs with. The zero value of every field
// selects its default.
type Env struct {
	// Duration is the measured time of each run, after its warm-up;
	// default the experiment's own (Short: 2 s).
	Duration time.Duration
	// Short makes a quick run: 2 s per run after 500 ms of warm-up.
	Short bool
	// Command is the command line the report records.
	Command string
	// Now gives the report's date; default time.Now.
	Now func() time.Time

	// Out receives progress lines; nil prints nothing.
	Out io.Writer
	// Logger receives lifecycle events of the testbed, ports and switch.
	Logger *zap.Logger

	// Subnet, ID and StateDir are passed to testbed.Up; zero values select
	// its defaults.
	Subnet   netip.Prefix
	ID       string
	StateDir string
}

// times returns the warm-up and measured time of each run, def being the
// experiment's default measured time.
func (e Env) times(def time.Duration) (warmup, duration time.Duration) {
	warmup, duration = demo.DefaultWarmup, def
	if e.Short {
		warmup, duration = 500*time.Millisecond, 2*time.Second
	}
	if e.Duration > 0 {
		duration = e.Duration
	}
	return warmup, duration
}

// demo runs demo.Run with o on AF_XDP ports, CPUs placed (node.Demo), with
// the env's output, logger and testbed names.
func (e Env) demo(ctx context.Context, o demo.Options) (*demo.Result, error) {
	o.Out, o.Logger = e.Out, e.Logger
	o.Subnet, o.ID, o.StateDir = e.Subnet, e.ID, e.StateDir
	return node.Demo(ctx, o)
}

// now returns the time the report is dated.
func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}
