package node

import "github.com/ecnswitch/ecnswitch/dataplane"

// What the command line needs of the dataplane, re-exported so that cmd
// reaches the switch through node and config alone (DESIGN.md; the
// internal/layering test holds it to that).
type (
	// PortStats are a port's counters, as /stats reports them.
	PortStats = dataplane.PortStats
	// QueueStats are a queue's counters, as /stats reports them.
	QueueStats = dataplane.QueueStats
	// Delay is a port's added delay, as the config describes it.
	Delay = dataplane.Delay
	// Placement splits this process's CPUs between the switch's workers
	// and everything else.
	Placement = dataplane.Placement
)

// DefaultWorkers is the number of workers of a config that sets none.
const DefaultWorkers = dataplane.DefaultWorkers

// Place keeps workers CPUs for the switch's workers and leaves the rest to
// everything else (dataplane.Place).
func Place(workers int) (Placement, error) { return dataplane.Place(workers) }

// FormatCPUs writes a set of CPUs as taskset's list does: 0-3,6.
func FormatCPUs(cpus []int) string { return dataplane.FormatCPUs(cpus) }
