package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	return []Experiment{mqecnStatic(), mqecnQueues(), pmsbSched(), ecnsharpRTT(), ecnsharpIncast(), fctExperiment(fctWorkload), bccShared(), dxExperiment(), dxClosedLoopExperiment(), dxStepsExperiment(), fctExperiment(fctDataMining), trimIncast(), hpccExperiment(), l4sCoexist()}
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
