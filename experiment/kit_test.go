package experiment

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
)

// fakeSwitch counts its stops and fails each with err.
type fakeSwitch struct {
	stops int
	err   error
}

func (s *fakeSwitch) Stats() dataplane.Stats { return dataplane.Stats{} }
func (s *fakeSwitch) ResetSojourn()          {}
func (s *fakeSwitch) Stop() error            { s.stops++; return s.err }

// TestRunStopsOnce: the kit stops a run's switch once, whether the run
// stopped it itself or not, or panicked, and joins the stop's error to the
// run's.
func TestRunStopsOnce(t *testing.T) {
	errRun, errStop := errors.New("run"), errors.New("stop")
	for _, c := range []struct {
		name    string
		stop    bool // the run stops the switch itself
		runErr  error
		stopErr error
		want    []error
	}{
		{"clean", false, nil, nil, nil},
		{"run stops it", true, nil, nil, nil},
		{"run fails", false, errRun, nil, []error{errRun}},
		{"stop fails", false, nil, errStop, []error{errStop}},
		{"both fail", false, errRun, errStop, []error{errRun, errStop}},
	} {
		sw := &fakeSwitch{err: c.stopErr}
		err := runSwitch(sw, func(s demo.Switch) error {
			if c.stop {
				if err := s.Stop(); err != nil {
					return err
				}
			}
			return c.runErr
		})
		if sw.stops != 1 {
			t.Errorf("%s: stopped %d times, want once", c.name, sw.stops)
		}
		for _, w := range c.want {
			if !errors.Is(err, w) {
				t.Errorf("%s: error %v, want %v in it", c.name, err, w)
			}
		}
		if len(c.want) == 0 && err != nil {
			t.Errorf("%s: error %v", c.name, err)
		}
	}
	// A run that panics still stops its switch.
	sw := &fakeSwitch{}
	func() {
		defer func() { recover() }()
		runSwitch(sw, func(demo.Switch) error { panic("run") })
	}()
	if sw.stops != 1 {
		t.Errorf("panicking run: stopped %d times, want once", sw.stops)
	}
	// A switch without a tap says so.
	if err := (&stopOnce{Switch: &fakeSwitch{}}).AddTap(0, nil); err == nil || !strings.Contains(err.Error(), "takes no tap") {
		t.Errorf("AddTap on a switch without taps: %v", err)
	}
}

// TestEnv: the env's output, logger and testbed names reach the demo's
// options; progress goes to Out, or nowhere.
func TestEnv(t *testing.T) {
	var out bytes.Buffer
	e := Env{Out: &out, ID: "x1", StateDir: "/run/x"}
	o := e.with(demo.Options{K: 1000})
	if o.Out != &out || o.ID != "x1" || o.StateDir != "/run/x" || o.K != 1000 {
		t.Errorf("options %+v", o)
	}
	e.say("fct: %d flows", 3)
	Env{}.say("nowhere")
	if out.String() != "fct: 3 flows\n" {
		t.Errorf("progress %q", out.String())
	}
	if w, d := (Env{Short: true}).times(time.Minute); w != 500*time.Millisecond || d != 2*time.Second {
		t.Errorf("short times %v, %v", w, d)
	}
	if w, d := (Env{Duration: 3 * time.Second}).times(time.Minute); w != demo.DefaultWarmup || d != 3*time.Second {
		t.Errorf("times %v, %v", w, d)
	}
	rep := Env{Command: "c", Now: func() time.Time { return time.Unix(7, 0) }}.report(mqecnStatic(), "t")
	if rep.Name != "mqecn-static" || rep.Title != "t" || rep.Paper != mqecnStatic().Paper || rep.Command != "c" || !rep.Date.Equal(time.Unix(7, 0)) ||
		rep.Build != buildinfo.Read() {
		t.Errorf("report %+v", rep)
	}
}
