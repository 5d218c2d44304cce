package dataplane_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/dataplane/dataplanetest"
	"github.com/ecnswitch/ecnswitch/marking"
)

// Validate checks what New checks, naming the key, and builds no marker.
func TestValidate(t *testing.T) {
	good := func() dataplane.Config {
		c := dataplanetest.Config(2, 4, 1e9, 1<<20)
		c.Ports[0].Enqueue = []dataplane.MarkerSpec{{Name: "never", New: func(int) (marking.Marker, error) {
			t.Error("Validate built a marker")
			return nil, nil
		}}}
		return c
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*dataplane.Config)
		want string
	}{
		{"workers", func(c *dataplane.Config) { c.Workers = dataplane.MaxWorkers + 1 }, "workers: 65 outside [1, 64]"},
		{"frames", func(c *dataplane.Config) { c.Frames = 1000 }, "frames: 1000 is not a power of two"},
		{"cpu", func(c *dataplane.Config) { c.CPUs = []int{dataplane.MaxCPU + 1} }, "cpus[0]: 1024 outside [0, 1023]"},
		{"delay", func(c *dataplane.Config) { c.Ports[1].Delay.Fixed = 2 * time.Second }, "ports[1].delay: delay 2s"},
		{"delay queue", func(c *dataplane.Config) {
			c.Ports[1].Delay.PerQueue = map[int]dataplane.Delay{4: {Fixed: time.Microsecond}}
		}, "ports[1] (b): delay.per_queue: queue 4 outside [0, 3]"},
		{"scheduler", func(c *dataplane.Config) { c.Ports[0].Scheduler.NumQueues = 65 }, "ports[0] (a): invalid scheduler config: num_queues: 65"},
		{"buffer queues", func(c *dataplane.Config) { c.Ports[0].Queues = c.Ports[0].Queues[:3] }, "ports[0] (a): queues: 3 buffer queue configs for 4 scheduler queues"},
		{"shaper", func(c *dataplane.Config) { c.Ports[0].Shaper.Bucket = -1 }, "shaper.bucket: -1"},
		{"pool", func(c *dataplane.Config) { c.Ports[1].Pool = 1 }, "ports[1].pool: 1 outside [0, 0]"},
		{"patch", func(c *dataplane.Config) { c.Forwarding.Patches = []dataplane.Patch{{From: 0, To: 2}} }, "patches[0].to: port 2 outside [0, 1]"},
		{"classifier", func(c *dataplane.Config) { c.Classifier.DSCP = map[uint8]int{46: 4} }, "dscp[46]: queue 4 outside [0, 3]"},
	} {
		cfg := good()
		c.edit(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate() = %v, want %q", c.name, err, c.want)
		}
	}
}

// DSCPQueue is the classifier's rule: the map, else the class selector,
// capped at the port's last queue.
func TestDSCPQueue(t *testing.T) {
	cl := dataplane.Classifier{DSCP: map[uint8]int{46: 5}}
	for _, c := range []struct {
		dscp   uint8
		queues int
		want   int
	}{{0, 8, 0}, {8, 8, 1}, {63, 8, 7}, {46, 8, 5}, {46, 4, 3}, {40, 2, 1}} {
		if got := cl.DSCPQueue(c.dscp, c.queues); got != c.want {
			t.Errorf("DSCPQueue(%d, %d) = %d, want %d", c.dscp, c.queues, got, c.want)
		}
	}
}

func TestDefaultBucket(t *testing.T) {
	for rate, want := range map[int64]int64{0: 0, 100e6: 2500, 1e9: 2500, 10e9: 25_000} {
		if got := dataplane.DefaultBucket(rate); got != want {
			t.Errorf("DefaultBucket(%d) = %d, want %d", rate, got, want)
		}
	}
}
